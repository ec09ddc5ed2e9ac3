/**
 * Text made inert for a terminal (issue #36): run names, tags, notes, config strings and model
 * output are data, and a terminal executes some data. ESC starts the control sequences that
 * retitle a window (OSC 0), clear the screen (CSI 2J), move the cursor or write to the clipboard
 * (OSC 52); C1 controls (U+0080–U+009F) are single-character versions of the same in terminals
 * that honour them (xterm does); a carriage return or backspace overwrites what is shown, and the
 * Unicode bidirectional controls reorder it ("Trojan Source", CVE-2021-42574). Each is shown as
 * its escape (`\x1b`, `\u202e`) instead, so what is printed is what is stored, and nothing runs.
 *
 * `inertText` keeps newlines and tabs (multi-line text: notes, model answers, tables);
 * `inertLine` escapes them too (one value on one line: a name, a tag).
 */

const NAMED: Record<number, string> = { 0x0a: '\\n', 0x0d: '\\r', 0x09: '\\t' };

/** C0, DEL, C1; ALM, LRM/RLM, the bidi embeddings/overrides and the isolates. */
function isControl(code: number): boolean {
  return code < 0x20 || (code >= 0x7f && code <= 0x9f) || code === 0x061c || code === 0x200e || code === 0x200f || (code >= 0x202a && code <= 0x202e) || (code >= 0x2066 && code <= 0x2069);
}

function escapeCode(code: number): string {
  const named = NAMED[code];
  if (named) return named;
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** `text` with each control character escaped, except those `keep` lets through. */
function escapeControls(text: string, keep: (code: number) => boolean, escape: (code: number) => string = escapeCode): string {
  let out = '';
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (!isControl(code) || keep(code)) continue;
    out += text.slice(from, i) + escape(code);
    from = i + 1;
  }
  return from === 0 ? text : out + text.slice(from);
}

/** `text` with every terminal control but newline and tab shown as its escape. */
export function inertText(text: string): string {
  return escapeControls(text, (code) => code === 0x0a || code === 0x09);
}

/** `text` on one line: newlines and tabs escaped as well. */
export function inertLine(text: string): string {
  return escapeControls(text, () => false);
}

/**
 * JSON for a terminal: JSON.stringify already escapes C0, but not DEL, C1 or the bidi controls;
 * these are written as \u escapes, which leaves the JSON equal in value.
 */
export function inertJson(json: string): string {
  // Inside strings JSON.stringify has escaped C0 already (the newlines left are its indentation).
  return escapeControls(json, (code) => code < 0x20, (code) => `\\u${code.toString(16).padStart(4, '0')}`);
}
