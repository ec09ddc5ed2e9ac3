/**
 * Colours that mean the same thing in every chart: an agent keeps its colour across panels, the
 * Gantt chart and the trajectory tree. Roles get a hue (Solver orange, Verifier blue, Corrector
 * green) and later rounds a lighter shade of it, so Verifier2 reads as "another Verifier". What
 * a name's role and round are is src-shared/agents.ts's; the colours are the renderer's theme.
 */
import { splitAgent } from '#shared/agents';

const ROLE_SHADES: Record<string, string[]> = {
  solver: ['#f0883e', '#ffa657', '#ffc680'],
  verifier: ['#58a6ff', '#a5d6ff', '#cae8ff', '#79c0ff'],
  corrector: ['#3fb950', '#7ee787', '#aff5b4', '#56d364'],
};
const OTHER = ['#d2a8ff', '#e3b341', '#ff7b72', '#79c0ff', '#f778ba', '#7ee787', '#ffa657', '#a5d6ff'];

function hash(text: string): number {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (h * 31 + text.charCodeAt(i)) | 0;
  return Math.abs(h);
}

export function agentColor(agent: string): string {
  if (agent === 'system') return '#e6edf3';
  const { role, round } = splitAgent(agent);
  const shades = ROLE_SHADES[role];
  if (shades) return shades[Math.max(0, round - 1) % shades.length];
  return OTHER[hash(agent) % OTHER.length];
}

/** The i-th colour for lines that are not agents (eval/system accuracy, avg@k, pass@k …). */
export function seriesColor(index: number): string {
  return OTHER[index % OTHER.length];
}

/** Chart chrome, matching the app's dark theme (styles/base.css). */
export const CHART_THEME = {
  text: '#8d96a1',
  textStrong: '#d7dbe0',
  grid: '#242931',
  axis: '#2a2f37',
  tooltipBg: '#1c2026',
  tooltipBorder: '#2a2f37',
  font: 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif',
  mono: 'ui-monospace, "SF Mono", Menlo, Consolas, "DejaVu Sans Mono", monospace',
};

/** What every chart starts from: no animation (redraws follow live data) and the theme's text. */
export const CHART_BASE = { animation: false, textStyle: { fontFamily: CHART_THEME.font, color: CHART_THEME.text } };
