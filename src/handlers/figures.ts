/** How health and monitoring records round: rates to four places, times to a tenth of a millisecond (more is noise). */

/** `part` of `whole`; null when there is no whole. */
export const rate = (part: number, whole: number) => (whole > 0 ? Math.round((part / whole) * 10_000) / 10_000 : null)

export const tenths = (value: number | undefined) => (value === undefined ? null : Math.round(value * 10) / 10)
