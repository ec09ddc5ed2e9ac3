// A stand-in for the preload's window.studio, for looking at the built renderer in a plain
// browser (screenshots, layout work). Test-only: serve-renderer.mjs injects it; nothing ships it.
//   ?empty   no runs at all            ?error   listRuns fails
//   ?count=N how many runs (default 640)
(() => {
  const params = new URLSearchParams(location.search);
  const count = params.has('empty') ? 0 : Number(params.get('count') ?? 640);
  const now = Date.now();

  // Deterministic pseudo-random numbers, so screenshots are comparable between runs.
  let state = 20251114;
  const random = () => ((state = (state * 1103515245 + 12345) % 2147483648) / 2147483648);
  const pick = (list) => list[Math.floor(random() * list.length)];

  const presets = ['quick', 'sort8', 'sort8-drmas', 'add4', null];
  const tasks = ['sort8', 'sort8', 'add4', 'parity16'];
  const schemes = ['decoupled', 'shared'];
  const modes = ['agentwise', 'global', 'agent-mean', 'agent-std', 'no-std'];
  const names = ['baseline', 'agentwise-norm', 'oracle-verifier', 'corrector-always', 'lr-sweep', 'warm-start', 'ablation'];
  const tags = ['paper', 'sweep', 'control', 'drmas', 'long'];

  const runs = [];
  for (let id = count; id >= 1; id -= 1) {
    const age = (count - id) * 47 * 60_000 + Math.floor(random() * 30 * 60_000);
    const status = id > count - 2 ? 'running' : id === count - 2 ? 'queued' : pick(['done', 'done', 'done', 'failed', 'interrupted']);
    const task = pick(tasks);
    runs.push({
      id,
      name: `${task}-${pick(names)}-${String(id).padStart(3, '0')}`,
      status,
      statusReason: status === 'failed' ? 'NaN in solver/loss at step 212' : status === 'interrupted' ? 'stopped by user' : null,
      preset: pick(presets),
      task,
      rewardScheme: pick(schemes),
      advantageMode: pick(modes),
      pipelineMode: 'pipelined',
      seed: Math.floor(random() * 10_000),
      backend: 'wasm',
      tags: random() < 0.35 ? [pick(tags)] : [],
      notes: '',
      createdAt: now - age,
      startedAt: now - age + 2000,
      endedAt: status === 'running' || status === 'queued' ? null : now - age + 3_600_000,
      lastStep: status === 'queued' ? null : Math.floor(random() * 4000),
      keyMetrics: {},
    });
  }

  const delay = (value) => new Promise((resolve) => setTimeout(() => resolve(value), 60));
  const unsupported = (name) => () => Promise.reject(new Error(`${name} is not part of the renderer harness`));

  const studio = {
    appInfo: () =>
      delay({ version: '0.1.0', databasePath: '/home/researcher/.config/MarsRL Studio/marsrl.db', schemaVersion: 3, transport: 'electron' }),
    listRuns: (query = {}) => {
      if (params.has('error')) return Promise.reject(new Error('database is locked'));
      const search = (query.search ?? '').toLowerCase();
      const matching = runs.filter(
        (run) =>
          (query.beforeId === undefined || run.id < query.beforeId) &&
          (!query.status || run.status === query.status) &&
          (!search || [run.name, run.preset ?? '', run.task, ...run.tags].some((text) => text.toLowerCase().includes(search))),
      );
      const limit = query.limit ?? 50;
      const items = matching.slice(0, limit);
      return delay({ items, nextCursor: matching.length > limit ? items[items.length - 1].id : null });
    },
    onEvent: () => () => {},
  };
  for (const name of ['getRun', 'updateRun', 'deleteRun', 'listPresets', 'getPreset', 'validateConfig', 'configSchema', 'startRun', 'stopRun', 'resumeRun', 'listMetricKeys', 'getSeries', 'listTurns', 'listEpisodes', 'getEpisode', 'listEvents', 'getTimeline']) {
    studio[name] = unsupported(name);
  }
  window.studio = Object.freeze(studio);
})();
