/**
 * Whether pushed events are flowing (the WebSocket of `marsrl serve`; IPC is always live).
 * `generation` grows on every reconnect: views watch it and refetch what they show, since
 * events pushed while the socket was down are gone.
 */
import { defineStore } from 'pinia';
import { ref } from 'vue';
import { onConnectionChange } from '../api/client';
import type { ConnectionState } from '../api/http';

export const useConnectionStore = defineStore('connection', () => {
  const state = ref<ConnectionState>('connecting');
  const generation = ref(0);
  let stop: (() => void) | null = null;

  function follow(): void {
    stop ??= onConnectionChange((next, reconnected) => {
      state.value = next;
      if (reconnected) generation.value++;
    });
  }

  return { state, generation, follow };
});
