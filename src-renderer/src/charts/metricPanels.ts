/**
 * Metric keys → chart panels, derived from the keys a run logged (never a fixed list), so a
 * metric the trainer starts logging tomorrow gets a chart without a UI change.
 *
 * Keys are slash-namespaced, first segment first (DESIGN.md): `solver/grad_norm`,
 * `verifier1/reward/mean`, `system/accuracy`, `eval/system/pass@8`. The rule:
 * - Training keys are grouped by their first segment (the agent, or system/perf/pipeline).
 *   A remainder logged by two or more namespaces (`grad_norm` by every agent, `accuracy` by
 *   system and solver) becomes one comparison panel with a line per namespace; remainders that
 *   differ only in their last segment (`advantage/mean`, `advantage/std`) share a panel.
 *   What is left stays in a panel per namespace (`verifier1`: precision and recall).
 * - Phase keys (`eval/…` for held-out evaluation, `pretrain/…` for the warm start) get their own
 *   section and are grouped the same way, with everything but the last segment as the
 *   namespace, so `eval/system/accuracy`, `eval/solver/accuracy` and the controls' accuracies
 *   land in one panel, and avg@k with pass@k in another.
 * - A panel holds one unit (the metric catalog's): a namespace whose metrics have different
 *   units (`perf`: tokens/s and seconds; `fixed`: a count and a share) gets a panel per unit, so
 *   no series lies flat against another's scale (issue 18).
 * - Titles say what the panel holds, from the catalog ("System − Solver accuracy"), never only
 *   the namespace a lone metric happens to sit in.
 */
import { describeMetric, metricTooltip, type MetricUnit } from '#shared/metric-catalog';
import { compareAgents } from '#shared/agents';
import { agentColor, seriesColor } from './palette';

export interface PanelLine {
  key: string;
  label: string;
  color: string;
  /** A secondary statistic of the same thing (a std next to a mean). */
  dashed: boolean;
}

export interface MetricPanel {
  id: string;
  title: string;
  subtitle: string;
  /** The one unit of every line (the y axis is titled with it). */
  unit: MetricUnit;
  /** The values the lines can take (a share: [0, 1]); the y axis stays within it. */
  range?: readonly [number, number];
  /** Held-out evaluation or warm-start values: not smoothed unless the user asks. */
  evaluation: boolean;
  /** Title, description, unit and source of each line's metric, for the title's tooltip. */
  description: string;
  lines: PanelLine[];
}

function panelOf(id: string, title: string, subtitle: string, lines: PanelLine[]): MetricPanel {
  const info = describeMetric(lines[0].key);
  const seen = new Set<string>();
  const texts: string[] = [];
  for (const line of lines) {
    const text = metricTooltip(line.key);
    const name = text.split('\n').slice(1).join('\n');
    if (!seen.has(name)) texts.push(text);
    seen.add(name);
  }
  return { id, title, subtitle, unit: info.unit, ...(info.range ? { range: info.range } : {}), evaluation: info.evaluation, description: texts.join('\n\n'), lines };
}

export interface MetricSection {
  id: string;
  title: string;
  panels: MetricPanel[];
}

/** Namespaces that are phases of a run rather than agents, in the order they are shown. */
const PHASES: { prefix: string; title: string }[] = [
  { prefix: 'eval', title: 'Held-out evaluation' },
  { prefix: 'pretrain', title: 'Warm start' },
];

/** The order researchers read a GRPO run in; anything else follows alphabetically. */
const PREFERRED = ['accuracy', 'reward', 'advantage', 'grad_norm', 'inflation', 'entropy', 'kl', 'response_length'];

function preferredRank(name: string): number {
  const head = name.split('/')[0];
  const index = PREFERRED.indexOf(head);
  return index === -1 ? PREFERRED.length : index;
}

function compareNames(a: string, b: string): number {
  return preferredRank(a) - preferredRank(b) || a.localeCompare(b);
}

interface Entry {
  key: string;
  ns: string;
  rest: string;
}

/**
 * Two lines of a panel never share a colour: a mean and its std do (the std is dashed), but two
 * namespaces whose names hash to the same colour get the next free one.
 */
function distinctColors(lines: PanelLine[]): void {
  const owner = new Map<string, string>();
  let next = 0;
  for (const line of lines) {
    const name = line.label.split(' ')[0];
    const taken = owner.get(line.color);
    if (taken === undefined || taken === name) {
      owner.set(line.color, name);
      continue;
    }
    let color = seriesColor(next++);
    while (owner.has(color) && next < 64) color = seriesColor(next++);
    line.color = color;
    owner.set(color, name);
  }
}

function buildPanels(entries: Entry[], idPrefix: string): MetricPanel[] {
  const byRest = new Map<string, Entry[]>();
  for (const entry of entries) byRest.set(entry.rest, [...(byRest.get(entry.rest) ?? []), entry]);

  // Shared remainders, merged by prefix when they differ only in the last segment.
  const shared = [...byRest.entries()].filter(([, list]) => new Set(list.map((e) => e.ns)).size >= 2);
  const sharedByPrefix = new Map<string, string[]>();
  for (const [rest] of shared) {
    const cut = rest.lastIndexOf('/');
    const prefix = cut === -1 ? rest : rest.slice(0, cut);
    sharedByPrefix.set(prefix, [...(sharedByPrefix.get(prefix) ?? []), rest]);
  }
  const panels: MetricPanel[] = [];
  const used = new Set<string>();
  for (const prefix of [...sharedByPrefix.keys()].sort(compareNames)) {
    const rests = sharedByPrefix.get(prefix)!.sort((a, b) => (a.endsWith('/mean') ? -1 : b.endsWith('/mean') ? 1 : a.localeCompare(b)));
    const merged = rests.length > 1;
    const lines: PanelLine[] = [];
    rests.forEach((rest, restIndex) => {
      for (const entry of byRest.get(rest)!.slice().sort((a, b) => compareAgents(a.ns, b.ns))) {
        used.add(entry.key);
        lines.push({
          key: entry.key,
          label: merged ? `${entry.ns} ${rest.slice(rest.lastIndexOf('/') + 1)}` : entry.ns,
          color: agentColor(entry.ns.split('/').pop() ?? entry.ns),
          dashed: restIndex > 0,
        });
      }
    });
    distinctColors(lines);
    // "Reward (mean)" names one line of a merged mean/std panel; the panel is about the reward.
    const title = describeMetric(lines[0].key).title.replace(/ \((mean|std)\)$/, '');
    panels.push(panelOf(
      `${idPrefix}:${prefix}`,
      title,
      merged ? rests.map((r) => r.slice(r.lastIndexOf('/') + 1)).join(' · ') : `${new Set(lines.map((l) => l.label)).size} series`,
      lines,
    ));
  }

  // What is left: one panel per namespace.
  const byNs = new Map<string, Entry[]>();
  for (const entry of entries) if (!used.has(entry.key)) byNs.set(entry.ns, [...(byNs.get(entry.ns) ?? []), entry]);
  for (const ns of [...byNs.keys()].sort(compareAgents)) {
    const all = byNs.get(ns)!.sort((a, b) => compareNames(a.rest, b.rest));
    const byUnit = new Map<MetricUnit, Entry[]>();
    for (const entry of all) {
      const unit = describeMetric(entry.key).unit;
      byUnit.set(unit, [...(byUnit.get(unit) ?? []), entry]);
    }
    for (const [unit, list] of byUnit) {
      const lines = list.map((e, i) => ({ key: e.key, label: e.rest, color: list.length === 1 ? agentColor(ns) : seriesColor(i), dashed: false }));
      const info = describeMetric(list[0].key);
      // A lone metric is titled by what it is, with the namespace it belongs to.
      const title = list.length === 1 ? (info.subject && !info.title.toLowerCase().includes(info.subject) ? `${info.title} · ${ns}` : info.title) : `${ns}: ${list.map((e) => e.rest).join(', ')}`;
      const id = byUnit.size === 1 ? `${idPrefix}:${ns}` : `${idPrefix}:${ns}:${unit.replace(/[^a-z0-9]+/gi, '-')}`;
      panels.push(panelOf(id, title, list.length === 1 ? list[0].key : list.map((e) => e.rest).join(' · '), lines));
    }
  }
  return panels;
}

export function metricSections(keys: readonly string[]): MetricSection[] {
  const phaseEntries = new Map<string, Entry[]>(PHASES.map((p) => [p.prefix, []]));
  const trainEntries: Entry[] = [];
  // Keys with no namespace (MLflow's `loss`, trackio's `lr`: runs made elsewhere, issue 39), each its own panel.
  const flatEntries: Entry[] = [];
  for (const key of keys) {
    const parts = key.split('/');
    if (parts.length === 1 && key.trim() !== '') flatEntries.push({ key, ns: key, rest: key });
    if (parts.length < 2 || parts.some((p) => p === '')) continue;
    const phase = phaseEntries.get(parts[0]);
    if (phase && parts.length >= 3) {
      phase.push({ key, ns: parts.slice(1, -1).join('/'), rest: parts[parts.length - 1] });
    } else {
      trainEntries.push({ key, ns: parts[0], rest: parts.slice(1).join('/') });
    }
  }
  const sections: MetricSection[] = [];
  const evalEntries = phaseEntries.get('eval') ?? [];
  if (evalEntries.length) sections.push({ id: 'eval', title: PHASES[0].title, panels: buildPanels(evalEntries, 'eval') });
  if (trainEntries.length) sections.push({ id: 'train', title: 'Training', panels: buildPanels(trainEntries, 'train') });
  for (const phase of PHASES.slice(1)) {
    const entries = phaseEntries.get(phase.prefix) ?? [];
    if (entries.length) sections.push({ id: phase.prefix, title: phase.title, panels: buildPanels(entries, phase.prefix) });
  }
  if (flatEntries.length) sections.push({ id: 'other', title: 'Other metrics', panels: buildPanels(flatEntries, 'other') });
  return sections;
}
