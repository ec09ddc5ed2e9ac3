/**
 * A native <dialog> shown modally while a flag is on (focus is trapped and Escape raises
 * `cancel`, with no code here): the StudioDialog frame (export, import, model export, replay) and
 * the confirmation dialog.
 */
import { nextTick, ref, watch, type Ref, type WatchSource } from 'vue';

/** The dialog's template ref; `onShown` runs each time it opens (to focus a field, reset a form). */
export function useModalDialog(isOpen: WatchSource<boolean>, onShown?: () => void): Ref<HTMLDialogElement | null> {
  const dialog = ref<HTMLDialogElement | null>(null);
  watch(
    isOpen,
    async (open) => {
      // The dialog element exists only after the render that follows the flag.
      await nextTick();
      const el = dialog.value;
      if (!el) return;
      if (open && !el.open) {
        el.showModal();
        onShown?.();
      } else if (!open && el.open) {
        el.close();
      }
    },
    { immediate: true },
  );
  return dialog;
}
