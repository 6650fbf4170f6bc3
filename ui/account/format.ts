/** Dates and numbers as people read them, in the page's locale. */
export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');
export const day = (iso: string) => new Date(iso).toLocaleDateString();
export const credits = (n: number) => `${n.toLocaleString()} credit${n === 1 ? '' : 's'}`;
