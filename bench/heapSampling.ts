/**
 * A sampling heap profile of a bench server while it is loaded: on
 * "heap-start" over IPC it samples every allocation (those freed since
 * included: what a call costs the garbage collector, not what it keeps), on
 * "heap-stop" it answers `{ heap: { bytes, byFile } }`: the bytes sampled in
 * all and by source file (a package's by package name), largest first.
 * bench/allocation.ts reads it per call.
 */
import { Session } from "node:inspector"
import { relative } from "node:path"
import { fileURLToPath } from "node:url"

interface ProfileNode {
  readonly callFrame: { readonly url: string; readonly functionName: string }
  readonly selfSize: number
  readonly children: ReadonlyArray<ProfileNode>
}

/** Bytes sampled between two allocations recorded: small enough for a call's few hundred objects. */
const SAMPLING_BYTES = 4096

const fileOf = (url: string) => {
  if (url === "") return "(native)"
  const path = url.startsWith("file:") ? fileURLToPath(url) : url
  const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)
  return inPackage !== null ? inPackage[1]! : path.startsWith("/") ? relative(process.cwd(), path) : path
}

export const answerHeapMessages = () => {
  const session = new Session()
  session.connect()
  const post = <A>(method: string, params?: object) =>
    new Promise<A>((resolve, reject) => session.post(method, params, (error, result) => (error ? reject(error) : resolve(result as A))))
  process.on("message", async (message) => {
    if (message === "heap-start") {
      await post("HeapProfiler.startSampling", {
        samplingInterval: SAMPLING_BYTES,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true
      })
      process.send!({ heapStarted: true })
    }
    if (message !== "heap-stop") return
    const { profile } = await post<{ profile: { head: ProfileNode } }>("HeapProfiler.stopSampling")
    const byFile = new Map<string, number>()
    let bytes = 0
    const walk = (node: ProfileNode) => {
      bytes += node.selfSize
      const file = fileOf(node.callFrame.url)
      byFile.set(file, (byFile.get(file) ?? 0) + node.selfSize)
      node.children.forEach(walk)
    }
    walk(profile.head)
    process.send!({ heap: { bytes, byFile: [...byFile].sort((a, b) => b[1] - a[1]) } })
  })
}
