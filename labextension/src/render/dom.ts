/** The few DOM helpers the renderers share; text always goes in as text, never as markup. */

/** An element of `tag` with `className` and, when given, `text`. */
export function element(
  tag: string,
  className: string,
  text?: string
): HTMLElement {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** A note to the reader (what is not shown, and why). */
export function note(text: string): HTMLElement {
  return element('p', 'jp-MCPView-note', text);
}
