export { createStudioServer, type StudioServer, type StudioServerOptions } from './server';
export { buildInstructions, buildOutDir, buildRenderer, defaultRendererDir } from './renderer-build';
export { generateToken, isLoopbackHost } from './security';
