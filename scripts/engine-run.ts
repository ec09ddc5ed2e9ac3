/**
 * A first real engine run before the Studio's integration lands (issue 38): plans a preset, starts
 * a local Ray head if asked, probes the interpreter, submits through the Ray Jobs REST API and
 * follows the job to its end, writing every normalized record to `<attempt>/records.jsonl`. It uses
 * the same code the Studio will (src-main/engine/engines); nothing goes into a store yet.
 *
 *   npx tsx scripts/engine-run.ts --preset verl-grpo \
 *     --set engine.address=local --set engine.python=$HOME/verl-venv/bin/python \
 *     --set engine.model=$HOME/models/Qwen2.5-0.5B-Instruct [--run-id 1] [--attempt 1] [--dry-run]
 *
 * --dry-run prints the command that would be submitted and the files, and stops.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import YAML from 'yaml';
import { applyOverrides } from '../src-main/engine/config/load';
import { defaultDataDir } from '../src-main/engine/paths';
import { loadKeyApprovals } from '../src-main/engine/served/key-approvals';
import { RayJobsClient, ensureLocalHead, getEngine, initialFollowState, localPath, parseEngineRun, probeLocal, probeOnCluster, stopLocalHead, storeTagOf } from '../src-main/engine/engines';

const { values } = parseArgs({
  options: {
    preset: { type: 'string' },
    config: { type: 'string' },
    set: { type: 'string', multiple: true, default: [] },
    'run-id': { type: 'string', default: '1' },
    attempt: { type: 'string', default: '1' },
    'dry-run': { type: 'boolean', default: false },
    'keep-head': { type: 'boolean', default: false },
  },
});

const file = values.config ?? (values.preset ? path.resolve('resources/engines/presets', `${values.preset}.yaml`) : null);
if (!file) throw new Error('give --preset verl-grpo|drmas-marsrl or --config FILE');
const doc = applyOverrides(YAML.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>, values.set ?? []);
const { config, engine } = parseEngineRun(doc, file);
const dataDir = defaultDataDir();

let address = engine.address;
let startedHead = false;
if (address === 'local') {
  const head = await ensureLocalHead({ python: engine.python, dataDir, numGpus: engine.gpus_per_node });
  address = head.address;
  startedHead = head.startedByStudio;
  console.log(`Ray head at ${address} (${head.startedByStudio ? 'started by the Studio' : 'already running, not ours'})`);
}
const client = new RayJobsClient({ address, tokenEnv: engine.token_env, approvals: loadKeyApprovals() });
const probe = engine.address === 'local' ? await probeLocal(engine.python, engine.working_dir ?? '/') : await probeOnCluster(client, engine.python, { cwd: engine.working_dir });
console.log(`probe: verl ${probe.verl} (DrMAS: ${probe.drmas}), ray ${probe.ray}, torch ${probe.torch}, vllm ${probe.vllm}, sglang ${probe.sglang}, tensorboard ${probe.tensorboard}`);
const adapter = getEngine(engine.kind);
const plan = adapter.plan(config, engine, { runId: Number(values['run-id']), runName: `run-${values['run-id']}`, attempt: Number(values.attempt), storeTag: storeTagOf(path.join(dataDir, 'manual')), defaultRunRoot: path.join(dataDir, 'engine-runs'), probe });
for (const w of plan.warnings) console.log(`note: ${w}`);
console.log(`submission ${plan.submissionId}\nentrypoint:\n${plan.entrypoint}\nruntime_env: ${JSON.stringify(plan.runtimeEnv)}\nfiles: ${plan.files.map((f) => f.path).join(', ')}`);
if (values['dry-run']) process.exit(0);

const submitted = await adapter.submit(plan, config, client);
console.log(`${submitted.attached ? 'attached to' : 'submitted'} ${submitted.submissionId}: ${submitted.job.status}`);
const out = fs.createWriteStream(path.join(localPath(plan.layout, plan.layout.attemptDir), 'records.jsonl'), { flags: 'a' });
const follower = adapter.follow(plan.follow, client, plan.submissionId);
let state = initialFollowState();
const seen = { turns: 0, metrics: 0, lastStep: -1 };
for (;;) {
  const r = await follower.poll(state);
  state = r.state;
  for (const rec of r.records) {
    if (rec.kind === 'log') continue;
    out.write(`${JSON.stringify(rec)}\n`);
    if (rec.kind === 'turn') seen.turns++;
    if (rec.kind === 'metric') [seen.metrics, seen.lastStep] = [seen.metrics + 1, Math.max(seen.lastStep, rec.step)];
    if (rec.kind === 'status') console.log(`status ${rec.status}: ${rec.message ?? ''}`);
    if (rec.kind === 'checkpoint') console.log(`checkpoint step ${rec.step}: ${rec.policies.map((p) => p.hfDir ?? p.dir).join(', ')}`);
    if (rec.kind === 'warning') console.log(`warning (${rec.code}): ${rec.message}`);
    if (rec.kind === 'traceback') console.log(`traceback from ${rec.actor ?? 'the driver'}:\n${rec.text}`);
  }
  console.log(`step ${seen.lastStep}: ${seen.metrics} metrics, ${seen.turns} generations`);
  if (r.done) break;
  await new Promise((res) => setTimeout(res, 10_000));
}
out.end();
if (startedHead && !values['keep-head']) console.log(`Ray head: ${await stopLocalHead(dataDir)}`);
