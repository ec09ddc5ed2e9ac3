/**
 * Which code may import which (issue 37, "imports that point one way"): the layer table the
 * guard in layers.test.ts checks every import of the repository against. Data only.
 *
 * Read it top down: a layer may import itself and the layers it names, nothing else. Processes
 * first (the renderer and the preload reach main only through the shared contract), then main's
 * layers from the edges (electron, cli, server) down to the engine, then the engine's and the
 * renderer's folders by tier: a folder imports only folders of lower tiers, never one of its own
 * tier or above (files of one folder import each other freely). A file that no layer or tier
 * claims fails the guard, so a new folder is placed here when it is made.
 */

export type PackageRule =
  /** No package and no Node built-in at all: pure TypeScript (src-shared). */
  | 'nothing'
  /** Packages, but no Node built-in and not electron (the browser-side processes). */
  | 'browser'
  /** Anything but electron (Node code that also runs in the CLI, `marsrl serve` and the tests). */
  | 'no-electron'
  | 'anything';

export interface Layer {
  name: string;
  /** Folder prefixes (ending in /) or single files, repository-relative. The longest match wins. */
  paths: string[];
  /** The other layers it may import ('*': any layer of the repository). */
  mayImport: string[] | '*';
  packages: PackageRule;
  /** Packages allowed despite `packages` (the preload's electron). */
  alsoPackages?: string[];
  /** Why the layer sits where it does, for the failure message. */
  why: string;
}

const SRC_LAYERS = ['electron', 'cli', 'server', 'app', 'api', 'runner', 'engine', 'shared', 'preload', 'renderer'];

export const LAYERS: Layer[] = [
  { name: 'shared', paths: ['src-shared/'], mayImport: [], packages: 'nothing', why: 'src-shared is the pure layer main, preload and renderer all import: it imports nothing outside itself (no Node, no electron, no DOM, no package)' },
  { name: 'preload', paths: ['src-preload/'], mayImport: ['shared'], packages: 'browser', alsoPackages: ['electron'], why: 'the preload is only the bridge: electron and the shared contract' },
  { name: 'renderer', paths: ['src-renderer/'], mayImport: ['shared'], packages: 'browser', why: 'the renderer runs sandboxed in a browser: it reaches main only through window.studio and the shared contract, never src-main or Node' },
  { name: 'electron', paths: ['src-main/electron/', 'src-main/index.ts'], mayImport: ['app', 'api', 'runner', 'engine', 'shared'], packages: 'anything', why: 'the desktop shell sits on the API, the runner and the engine' },
  { name: 'cli', paths: ['src-main/cli/'], mayImport: ['server', 'app', 'api', 'runner', 'engine', 'shared'], packages: 'no-electron', why: 'the CLI is an edge: it may start the server (`marsrl serve`) and use every layer below' },
  { name: 'server', paths: ['src-main/server/'], mayImport: ['app', 'api', 'runner', 'engine', 'shared'], packages: 'no-electron', why: 'the HTTP server is an edge beside the desktop shell, never on it' },
  { name: 'app', paths: ['src-main/app/'], mayImport: ['api', 'runner', 'engine', 'shared'], packages: 'no-electron', why: 'the composition root wires the API, the runner and the store for every edge' },
  { name: 'api', paths: ['src-main/api/'], mayImport: ['runner', 'engine', 'shared'], packages: 'no-electron', why: 'the StudioApi is implemented over the runner and the engine' },
  { name: 'runner', paths: ['src-main/runner/'], mayImport: ['engine', 'shared'], packages: 'no-electron', why: 'the runner (run manager, workers) drives the engine and knows nothing of the API above it' },
  { name: 'engine', paths: ['src-main/engine/'], mayImport: ['shared'], packages: 'no-electron', why: 'the engine is plain Node under the runner and the API: it never imports them, electron or an edge' },
  { name: 'bench', paths: ['bench/'], mayImport: SRC_LAYERS, packages: 'anything', why: 'benchmarks may drive anything in the sources, and nothing in the sources imports them' },
  { name: 'tooling', paths: ['test/', 'bin/', 'scripts/', 'electron.vite.config.ts', 'vitest.config.ts', 'eslint.config.js'], mayImport: '*', packages: 'anything', why: 'tests, entry scripts and build configuration may import anything; nothing in the sources imports them' },
];

export interface Tiers {
  /** The layer whose folders are ranked, and the folder they sit in. */
  layer: string;
  root: string;
  /** Lowest tier first. A unit is the first path segment under root, a file's without its extension. */
  tiers: string[][];
  why: string;
}

/**
 * The engine's folders (issue 37): leaves at the bottom (utilities, the vocabulary of names and
 * types the config, agents and tasks share, the store), the pure schema low enough that every part
 * may read it, the model seam (model) under the model families (gpt, hf: one folder each),
 * checkpoints and the family registry above both families, the endpoint clients (served) apart
 * from what drives them, preflight (the config checks that read the disk: task files, model
 * folders, run size) above the tasks and the families it reads, training above everything it
 * drives, and on top the runs that use the training's run shell: the system run (served models in
 * MarsRL's loop) and the outside engines (veRL and DrMAS on Ray, issue 38); above them the
 * importers of runs made elsewhere (issue 39), which read engine folders with the engines'
 * followers; at the top replay (issue 40), which plays a run's chain again with the system run's
 * chain code and training's evaluation. The TensorBoard codec (tfevents: TFRecord framing, CRC-32C, the Event protos) is a
 * leaf: the importer reads it, the exporter writes it, the follower may read it.
 */
export const ENGINE_TIERS: Tiers = {
  layer: 'engine',
  root: 'src-main/engine/',
  tiers: [
    ['util', 'resources', 'tfevents'],
    ['paths', 'version', 'metrics', 'vocabulary'],
    ['config', 'store'],
    ['model', 'rl'],
    ['agents'],
    ['tasks'],
    ['gpt', 'hf'],
    ['checkpoint'],
    ['served', 'compare', 'export', 'rejudge'],
    ['preflight'],
    ['training', 'study'],
    ['system', 'engines'],
    ['imports'],
    ['replay'],
  ],
  why: 'engine folders import only folders of a lower tier (test/architecture/layers.ts, ENGINE_TIERS)',
};

/** The renderer's folders: pure helpers, then state (stores, the router), composables (view logic over the stores), then components, views, the app. */
export const RENDERER_TIERS: Tiers = {
  layer: 'renderer',
  root: 'src-renderer/src/',
  tiers: [['util', 'charts', 'api', 'styles', 'env'], ['stores', 'router'], ['composables'], ['components'], ['views'], ['App'], ['main']],
  why: 'renderer folders import only folders of a lower tier (test/architecture/layers.ts, RENDERER_TIERS)',
};

export const TIERS: Tiers[] = [ENGINE_TIERS, RENDERER_TIERS];
