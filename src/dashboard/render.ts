/** Building the page's pieces from API records: text only (no HTML from data), so nothing a record holds can run. */

export const el = <K extends keyof HTMLElementTagNameMap>(
  tag: K,
  text?: string,
  attributes: Record<string, string> = {}
): HTMLElementTagNameMap[K] => {
  const node = document.createElement(tag)
  if (text !== undefined) node.textContent = text
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value)
  return node
}

export const byId = <A extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as A

/** `<div><dt/><dd/></div>` cards of a definition list. */
export const cards = (list: HTMLElement, entries: ReadonlyArray<readonly [string, string, string?]>) => {
  list.replaceChildren(...entries.map(([term, value, className]) => {
    const card = el("div")
    card.append(el("dt", term), el("dd", value, className === undefined ? {} : { class: className }))
    return card
  }))
}

/** A table with a header row; a cell is text or a node (a button). */
export const table = (target: HTMLTableElement, caption: string, head: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string | Node>>) => {
  const headRow = el("tr")
  headRow.append(...head.map((name) => el("th", name, { scope: "col" })))
  const body = el("tbody")
  body.append(...rows.map((cells) => {
    const row = el("tr")
    row.append(...cells.map((cell) => {
      const td = el("td")
      td.append(cell)
      return td
    }))
    return row
  }))
  const head_ = el("thead")
  head_.append(headRow)
  target.replaceChildren(el("caption", caption, { class: "muted" }), head_, body)
}

export const appendRows = (target: HTMLTableElement, rows: ReadonlyArray<ReadonlyArray<string>>) => {
  const body = target.tBodies[0]!
  for (const cells of rows) {
    const row = el("tr")
    row.append(...cells.map((cell) => el("td", cell)))
    body.append(row)
  }
}

export const percent = (rate: number | null) => (rate === null ? "—" : `${(rate * 100).toFixed(1)}%`)
export const ms = (value: number | null) => (value === null ? "—" : `${value} ms`)
/** Dollars exactly as the API gives them (nine places), without trailing zeros. */
export const usd = (text: string) => `$${text.includes(".") ? text.replace(/0+$/, "").replace(/\.$/, ".00") : text}`
export const time = (iso: string) => new Date(iso).toLocaleString()
