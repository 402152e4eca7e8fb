/** A `fetch` for the official client that records every response a caller received, for a file's leak scan. */

/** Status, headers and body of one response, as one searchable line. */
export const describeResponse = (response: Response, body: string) =>
  `${response.status} ${JSON.stringify([...response.headers.entries()])} ${body}`

export const recordingFetch = (seen: Array<string>): typeof fetch => async (input, init) => {
  const response = await fetch(input, init)
  // Read the copy in the background: awaiting it would hold streams back until they end.
  response.clone().text().then(
    (body) => seen.push(describeResponse(response, body)),
    () => seen.push(describeResponse(response, "(aborted)"))
  )
  return response
}
