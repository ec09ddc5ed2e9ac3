#!/usr/bin/env node
/**
 * Regenerates resources/engines/<engine>/keys-<version>.json: the dotted keys an engine's Hydra
 * config accepts, flattened from its composed default config (veRL's checked-in
 * `verl/trainer/config/_generated_ppo_trainer.yaml`; DrMAS's single `ppo_trainer.yaml`), so the
 * Studio can refuse an override Hydra would refuse before anything is submitted (issue 38).
 *
 *   node scripts/engine-config-keys.mjs OUT.json VERSION SOURCE_LABEL < composed.yaml
 *
 * e.g. `git --git-dir=verl.git show v0.7.1:verl/trainer/config/_generated_ppo_trainer.yaml |
 *       node scripts/engine-config-keys.mjs resources/engines/verl/keys-0.7.1.json 0.7.1 verl-project/verl@bec9ef74`
 *
 * Kinds: n = null (Hydra accepts `+key=` on it), s = scalar, l = list, d = an empty mapping (new
 * children need `+`). A non-empty mapping is represented by its children.
 */
import fs from 'node:fs';
import YAML from 'yaml';

const [out, version, source] = process.argv.slice(2);
if (!out || !version || !source) {
  console.error('usage: node scripts/engine-config-keys.mjs OUT.json VERSION SOURCE_LABEL < composed.yaml');
  process.exit(2);
}
const doc = YAML.parse(fs.readFileSync(0, 'utf8'));
const keys = {};
(function walk(node, prefix) {
  for (const [k, v] of Object.entries(node)) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (v === null) keys[key] = 'n';
    else if (Array.isArray(v)) keys[key] = 'l';
    else if (typeof v === 'object') {
      if (Object.keys(v).length === 0) keys[key] = 'd';
      else walk(v, key);
    } else keys[key] = 's';
  }
})(doc, '');
delete keys.defaults;
const sorted = Object.fromEntries(Object.entries(keys).sort(([a], [b]) => (a < b ? -1 : 1)));
fs.writeFileSync(out, `${JSON.stringify({ format: 'marsrl-engine-config-keys', version, source, keys: sorted })}\n`);
console.log(`${out}: ${Object.keys(sorted).length} keys`);
