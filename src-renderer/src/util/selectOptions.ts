/** One `<option>` of a SelectInput: the value v-model takes (its type kept), the text shown, an optional tooltip. */
export interface SelectOption<V> {
  value: V;
  label: string;
  title?: string;
  disabled?: boolean;
}

/** Options that show their own value (a preset's name, a metric's key, an enum's member). */
export function textOptions<V extends string | number>(values: readonly V[]): SelectOption<V>[] {
  return values.map((value) => ({ value, label: String(value) }));
}
