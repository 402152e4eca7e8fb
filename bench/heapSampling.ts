/**
 * A sampling heap profile of a bench server while it is loaded: on
 * "heap-start" over IPC it samples every allocation (those freed since
 * included: what a call costs the garbage collector, not what it keeps; with
 * `BENCH_HEAP_SURVIVORS=1`, only those no scavenge freed), on
 * "heap-stop" it answers `{ heap: { bytes, byFile, byCaller } }`: the bytes
 * sampled in all, by source file (a package's by package name), and by the
 * nearest function of ours on the stack (what led Effect's runtime or a
 * package to allocate), largest first. bench/allocation.ts reads it per call.
 */
import { writeFileSync } from "node:fs"
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

/** Files of ours (not a package, not Node's). */
const OURS = /^(src|layers|services|plugins)\//

/** A script's file, or its package's name: how the bench's tables group code. */
export const fileOf = (url: string) => {
  if (url === "") return "(native)"
  const path = url.startsWith("file:") ? fileURLToPath(url) : url
  const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)
  return inPackage !== null ? inPackage[1]! : path.startsWith("/") ? relative(process.cwd(), path) : path
}

/** This process's own inspector: a method's answer as a promise. */
export const inspectorOfThisProcess = () => {
  const session = new Session()
  session.connect()
  return <A>(method: string, params?: object) =>
    new Promise<A>((resolve, reject) => session.post(method, params, (error, result) => (error ? reject(error) : resolve(result as A))))
}

export const answerHeapMessages = () => {
  const post = inspectorOfThisProcess()
  process.on("message", async (message) => {
    if (message === "heap-start") {
      await post("HeapProfiler.startSampling", {
        samplingInterval: SAMPLING_BYTES,
        includeObjectsCollectedByMajorGC: true,
        // Without those a scavenge frees: what outlived the young generation (promoted, or still live).
        includeObjectsCollectedByMinorGC: process.env.BENCH_HEAP_SURVIVORS !== "1"
      })
      process.send!({ heapStarted: true })
    }
    if (message !== "heap-stop") return
    const { profile } = await post<{ profile: { head: ProfileNode } }>("HeapProfiler.stopSampling")
    // The raw profile too, for a look by function (Chrome's DevTools open it), when asked for.
    if (process.env.BENCH_HEAP_FILE) writeFileSync(process.env.BENCH_HEAP_FILE, JSON.stringify(profile))
    const byFile = new Map<string, number>()
    const byCaller = new Map<string, number>()
    let bytes = 0
    const walk = (node: ProfileNode, caller: string) => {
      bytes += node.selfSize
      const file = fileOf(node.callFrame.url)
      byFile.set(file, (byFile.get(file) ?? 0) + node.selfSize)
      const ours = OURS.test(file) ? `${node.callFrame.functionName || "(anonymous)"} (${file})` : caller
      byCaller.set(ours, (byCaller.get(ours) ?? 0) + node.selfSize)
      node.children.forEach((child) => walk(child, ours))
    }
    walk(profile.head, "(no function of ours on the stack)")
    const largestFirst = (map: Map<string, number>) => [...map].sort((a, b) => b[1] - a[1])
    process.send!({ heap: { bytes, byFile: largestFirst(byFile), byCaller: largestFirst(byCaller) } })
  })
}
