/** What the app is connected to: shown in the footer so the user knows which database they see. */
import { defineStore } from 'pinia';
import { ref } from 'vue';
import type { AppInfo } from '#shared/contract';
import { errorMessage, studioClient } from '../api/client';

export const useAppInfoStore = defineStore('appInfo', () => {
  const info = ref<AppInfo | null>(null);
  const error = ref<string | null>(null);

  async function load(): Promise<void> {
    try {
      info.value = await studioClient().appInfo();
      error.value = null;
    } catch (caught) {
      error.value = errorMessage(caught);
    }
  }

  return { info, error, load };
});
