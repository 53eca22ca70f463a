/** Generated parts of Markdown files: text kept between a start and an end marker. */

/**
 * `text` with what lies between `start` and `end` replaced by `content` (on lines of its own).
 *
 * @throws Error naming `file` when either marker is missing or they are out of order
 */
export function replaceBetweenMarkers(
  text: string,
  [start, end]: readonly [string, string],
  content: string,
  file: string,
): string {
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (from < 0 || to < from) throw new Error(`${file} lacks the ${start} … ${end} markers`);
  return `${text.slice(0, from + start.length)}\n${content}\n${text.slice(to)}`;
}
