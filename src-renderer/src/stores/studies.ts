/**
 * Studies: the list with progress, one study's cells, launching a new one and writing its
 * report. Progress comes as pushed `study-progress` events; a run finishing inside a study
 * refreshes that study's cells.
 */
import { defineStore } from 'pinia';
import { ref, shallowRef } from 'vue';
import type { StartStudyRequest, StudioEvent, StudyDetail, StudyReportResult, StudySummary } from '#shared/contract';
import { studioClient } from '../api/client';
import { eventFollower } from './common/events';
import { readInto } from './common/requests';

export const useStudiesStore = defineStore('studies', () => {
  const studies = shallowRef<StudySummary[]>([]);
  const detail = shallowRef<StudyDetail | null>(null);
  const error = ref<string | null>(null);
  const report = shallowRef<StudyReportResult | null>(null);

  function loadList(): Promise<void> {
    return readInto(error, () => studioClient().listStudies(), (list) => (studies.value = list));
  }

  function open(studyId: number): Promise<void> {
    return readInto(error, () => studioClient().getStudy(studyId), (study) => (detail.value = study));
  }

  function applyEvent(event: StudioEvent): void {
    if (event.type === 'study-progress') {
      void loadList();
      if (detail.value?.id === event.studyId) void open(event.studyId);
    } else if (event.type === 'run-status' && detail.value?.cells.some((c) => c.runId === event.runId)) {
      void open(detail.value.id);
    }
  }

  const { follow, unfollow } = eventFollower(applyEvent);

  /** Launches a study; the caller shows the field errors the server names. */
  async function start(request: StartStudyRequest): Promise<number> {
    const { studyId } = await studioClient().startStudy(request);
    await loadList();
    return studyId;
  }

  function exportReport(studyId: number, out: string): Promise<void> {
    report.value = null;
    return readInto(error, () => studioClient().exportStudyReport(studyId, out), (written) => (report.value = written));
  }

  return { studies, detail, error, report, loadList, open, follow, unfollow, start, exportReport };
});

/** "reward.scheme: decoupled, shared" lines → the matrix's axes mapping (values stay text unless numeric/boolean). */
export function parseAxesText(text: string): { axes: Record<string, (string | number | boolean)[]>; problems: string[] } {
  const axes: Record<string, (string | number | boolean)[]> = {};
  const problems: string[] = [];
  text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .forEach((line, i) => {
      const colon = line.indexOf(':');
      if (colon <= 0) {
        problems.push(`line ${i + 1}: write "config.path: value1, value2"`);
        return;
      }
      const key = line.slice(0, colon).trim();
      const values = line
        .slice(colon + 1)
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean)
        .map((v) => (v === 'true' ? true : v === 'false' ? false : /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v));
      if (!values.length) problems.push(`line ${i + 1}: ${key} has no values`);
      else axes[key] = values;
    });
  return { axes, problems };
}
