/** Electron main entry. The CLI (bin/marsrl.js) enters the engine elsewhere and never loads this. */
import { startDesktopApp } from './electron/app';

startDesktopApp();
