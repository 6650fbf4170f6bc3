import { isTag, type ChildNode, type Element } from 'domhandler';
import { textContent } from 'domutils';
import { parseDocument } from 'htmlparser2';

/**
 * A page parsed once with htmlparser2, its elements listed in document order by one walk of the
 * tree. The extractors ask only for elements by tag name, so there is no selector engine in the
 * way: cheerio's `load` declared a class per page and compiled every selector per call, which made
 * most of a parse's garbage, and all of what outlived a request.
 */
export class HtmlPage {
  private readonly ordered: Element[] = [];

  constructor(html: string) {
    // Tag and attribute names come out lower-cased; of a repeated attribute the first counts, as in a browser.
    const root = parseDocument(html, { decodeEntities: true });
    const walk = (nodes: ChildNode[]) => {
      for (const node of nodes) {
        if (!isTag(node)) continue;
        this.ordered.push(node);
        walk(node.children);
      }
    };
    walk(root.children);
  }

  /** Elements with any of these tag names (lower case), in document order. */
  elements(...tags: string[]): Element[] {
    return this.ordered.filter((el) => tags.includes(el.name));
  }

  /** Every element, in document order. */
  all(): readonly Element[] {
    return this.ordered;
  }

  /** The first element with this tag name, or null. */
  first(tag: string): Element | null {
    return this.ordered.find((el) => el.name === tag) ?? null;
  }
}

/** An attribute's value as written (entities decoded), or undefined. */
export const attr = (el: Element, name: string): string | undefined => el.attribs[name];

/** The text inside an element, markup removed. */
export const text = (el: Element): string => textContent(el);

/** Descendants of an element with this tag name, in document order. */
export function descendants(el: Element, tag: string): Element[] {
  const found: Element[] = [];
  const walk = (nodes: ChildNode[]) => {
    for (const node of nodes) {
      if (!isTag(node)) continue;
      if (node.name === tag) found.push(node);
      walk(node.children);
    }
  };
  walk(el.children);
  return found;
}

/** The element itself or its nearest ancestor with this tag name, or null. */
export function closest(el: Element, tag: string): Element | null {
  for (let node: Element | null = el; node; node = node.parent && isTag(node.parent) ? node.parent : null) {
    if (node.name === tag) return node;
  }
  return null;
}
