/** What the app is connected to: shown in the footer so the user knows which database they see. */
import { defineStore } from 'pinia';
import { ref } from 'vue';
import type { AppInfo } from '#shared/contract';
import { studioClient } from '../api/client';
import { readInto } from './common/requests';

export const useAppInfoStore = defineStore('appInfo', () => {
  const info = ref<AppInfo | null>(null);
  const error = ref<string | null>(null);

  function load(): Promise<void> {
    return readInto(error, () => studioClient().appInfo(), (value) => (info.value = value));
  }

  return { info, error, load };
});
