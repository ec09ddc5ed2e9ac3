/** A form's problems, each at the field it names: the messages by field path, for the inputs to show beside them. */
export function messagesByPath(issues: readonly { path: string; message: string }[]): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const issue of issues) map.set(issue.path, [...(map.get(issue.path) ?? []), issue.message]);
  return map;
}
