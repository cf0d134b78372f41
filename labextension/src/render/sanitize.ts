/**
 * Untrusted HTML (a notebook output, Markdown) made safe to show.
 *
 * First JupyterLab's own sanitizer, as it treats an untrusted notebook's outputs: an allow
 * list of tags, attributes and CSS properties, no scripts, no event handlers, no `<style>`.
 * Then every reference to anything outside the document is dropped (pictures only from
 * `data:` URIs, no link targets, no `url()` in styles), so that showing an output never makes
 * a request, whatever the page's Content-Security-Policy would allow. The markup is parsed in
 * an inert `<template>`, which loads nothing, and only the cleaned fragment reaches the page.
 */
import { ISanitizer } from './types';

/** Attributes that name something to load or to go to. */
const REFERENCE_ATTRIBUTES = [
  'action',
  'background',
  'cite',
  'codebase',
  'data',
  'dynsrc',
  'formaction',
  'href',
  'longdesc',
  'lowsrc',
  'manifest',
  'ping',
  'poster',
  'src',
  'srcset',
  'xlink:href'
];

/** Whether `value` is a picture inside the document itself. */
function isDataPicture(value: string): boolean {
  return /^data:image\/(png|jpeg|gif|webp|bmp|avif);/i.test(value.trim());
}

/**
 * Drop every reference to the outside from `root` (in place).
 *
 * Kept: `data:` pictures in `<img src>`, in-page links (`href="#…"`). A link to elsewhere
 * keeps its text, with the address as its title.
 */
export function dropExternalReferences(root: DocumentFragment | Element): void {
  const elements = root.querySelectorAll('*');
  elements.forEach(element => {
    for (const name of REFERENCE_ATTRIBUTES) {
      const value = element.getAttribute(name);
      if (value === null) {
        continue;
      }
      const tag = element.tagName.toLowerCase();
      if (name === 'src' && tag === 'img' && isDataPicture(value)) {
        continue;
      }
      if (name === 'href' && value.trim().startsWith('#')) {
        continue;
      }
      element.removeAttribute(name);
      if (name === 'href' && tag === 'a') {
        element.setAttribute('title', value);
        element.classList.add('jp-MCPView-unlinked');
      }
    }
    const style = (element as HTMLElement).style;
    if (style && style.length) {
      for (const property of Array.from(style)) {
        if (
          /url\s*\(|image-set\s*\(|image\s*\(/i.test(
            style.getPropertyValue(property)
          )
        ) {
          style.removeProperty(property);
        }
      }
    }
  });
}

/** `html` sanitized as JupyterLab sanitizes untrusted outputs, without outside references. */
export function safeFragment(
  sanitizer: ISanitizer,
  html: string
): DocumentFragment {
  const template = document.createElement('template');
  template.innerHTML = sanitizer.sanitize(html);
  const fragment = template.content;
  dropExternalReferences(fragment);
  return document.importNode(fragment, true);
}
