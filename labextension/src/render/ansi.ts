/**
 * Terminal colours (ANSI SGR sequences) in streams and tracebacks, as coloured spans.
 *
 * Text only ever goes in through `textContent`, so nothing in it can become markup; the
 * server already dropped every escape other than colours and styles.
 */

const NAMES = [
  'black',
  'red',
  'green',
  'yellow',
  'blue',
  'magenta',
  'cyan',
  'white'
];

interface IStyle {
  fg?: string;
  bg?: string;
  bold?: boolean;
  italic?: boolean;
  underline?: boolean;
}

/** A colour of the 256-colour palette as CSS (the 16 first ones by class name). */
function paletteColour(n: number): string {
  if (n < 16) {
    return (n >= 8 ? 'bright-' : '') + NAMES[n % 8];
  }
  if (n < 232) {
    const levels = [0, 95, 135, 175, 215, 255];
    const i = n - 16;
    const r = levels[Math.floor(i / 36)];
    const g = levels[Math.floor(i / 6) % 6];
    const b = levels[i % 6];
    return `rgb(${r}, ${g}, ${b})`;
  }
  const grey = 8 + (n - 232) * 10;
  return `rgb(${grey}, ${grey}, ${grey})`;
}

function apply(codes: number[], style: IStyle): IStyle {
  const next: IStyle = { ...style };
  for (let i = 0; i < codes.length; i++) {
    const code = codes[i];
    if (code === 0) {
      Object.keys(next).forEach(key => delete (next as any)[key]);
    } else if (code === 1) {
      next.bold = true;
    } else if (code === 3) {
      next.italic = true;
    } else if (code === 4) {
      next.underline = true;
    } else if (code === 22) {
      next.bold = false;
    } else if (code === 23) {
      next.italic = false;
    } else if (code === 24) {
      next.underline = false;
    } else if (code >= 30 && code <= 37) {
      next.fg = NAMES[code - 30];
    } else if (code >= 90 && code <= 97) {
      next.fg = 'bright-' + NAMES[code - 90];
    } else if (code === 39) {
      delete next.fg;
    } else if (code >= 40 && code <= 47) {
      next.bg = NAMES[code - 40];
    } else if (code >= 100 && code <= 107) {
      next.bg = 'bright-' + NAMES[code - 100];
    } else if (code === 49) {
      delete next.bg;
    } else if (code === 38 || code === 48) {
      let colour: string | undefined;
      if (codes[i + 1] === 5 && i + 2 < codes.length) {
        colour = paletteColour(codes[i + 2]);
        i += 2;
      } else if (codes[i + 1] === 2 && i + 4 < codes.length) {
        colour = `rgb(${codes[i + 2]}, ${codes[i + 3]}, ${codes[i + 4]})`;
        i += 4;
      }
      if (colour !== undefined) {
        next[code === 38 ? 'fg' : 'bg'] = colour;
      }
    }
  }
  return next;
}

function setColour(
  span: HTMLElement,
  which: 'fg' | 'bg',
  colour: string
): void {
  if (colour.startsWith('rgb(')) {
    span.style.setProperty(
      which === 'fg' ? 'color' : 'background-color',
      colour
    );
  } else {
    span.classList.add(`jp-MCPView-ansi-${which}-${colour}`);
  }
}

/** Append `text` to `node`, its colour sequences shown as coloured spans. */
export function appendAnsi(node: HTMLElement, text: string): void {
  // eslint-disable-next-line no-control-regex
  const pattern = /\x1b\[([0-9;]*)m/g;
  let style: IStyle = {};
  let last = 0;
  const flush = (chunk: string): void => {
    if (!chunk) {
      return;
    }
    if (
      !style.fg &&
      !style.bg &&
      !style.bold &&
      !style.italic &&
      !style.underline
    ) {
      node.appendChild(document.createTextNode(chunk));
      return;
    }
    const span = document.createElement('span');
    span.textContent = chunk;
    if (style.fg) {
      setColour(span, 'fg', style.fg);
    }
    if (style.bg) {
      setColour(span, 'bg', style.bg);
    }
    if (style.bold) {
      span.classList.add('jp-MCPView-ansi-bold');
    }
    if (style.italic) {
      span.classList.add('jp-MCPView-ansi-italic');
    }
    if (style.underline) {
      span.classList.add('jp-MCPView-ansi-underline');
    }
    node.appendChild(span);
  };
  let match: RegExpExecArray | null;
  while ((match = pattern.exec(text)) !== null) {
    flush(text.slice(last, match.index));
    const codes =
      match[1] === ''
        ? [0]
        : match[1].split(';').map(n => parseInt(n || '0', 10));
    style = apply(codes, style);
    last = pattern.lastIndex;
  }
  flush(text.slice(last));
}
