/** Seconds rounded to whole milliseconds, the precision every transcript time is given in. */
export const roundMs = (seconds: number) => Math.round(seconds * 1000) / 1000;
