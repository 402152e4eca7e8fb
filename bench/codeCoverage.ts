/**
 * The code a bench server runs while it is loaded, from V8's precise
 * coverage with call counts: on "coverage-start" over IPC counting starts
 * from zero, on "coverage-stop" it answers `{ coverage: [[file, { functions,
 * calls, bytes }], ...] }`, by source file (a package's by package name):
 * for each function that ran, its name and offset, its calls and its
 * source's length (a nested function's included). bench/code.ts divides them
 * by the calls served.
 */
import { fileOf, inspectorOfThisProcess } from "./heapSampling.ts"

interface FunctionCoverage {
  readonly functionName: string
  readonly ranges: ReadonlyArray<{ readonly startOffset: number; readonly endOffset: number; readonly count: number }>
}
interface ScriptCoverage {
  readonly url: string
  readonly functions: ReadonlyArray<FunctionCoverage>
}

/** A file's functions as counted: `calls` of each, and `runs`, its functions with their calls, to weigh per call. */
export interface FileCode {
  readonly runs: ReadonlyArray<{ readonly name: string; readonly calls: number; readonly bytes: number }>
}

export const answerCoverageMessages = () => {
  const post = inspectorOfThisProcess()
  process.on("message", async (message) => {
    if (message === "coverage-start") {
      await post("Profiler.enable")
      await post("Profiler.startPreciseCoverage", { callCount: true, detailed: false })
      // Taking the coverage resets its counts: what follows is counted from zero.
      await post("Profiler.takePreciseCoverage")
      process.send!({ coverageStarted: true })
    }
    if (message !== "coverage-stop") return
    const { result } = await post<{ result: ReadonlyArray<ScriptCoverage> }>("Profiler.takePreciseCoverage")
    await post("Profiler.stopPreciseCoverage")
    const byFile = new Map<string, Array<{ name: string; calls: number; bytes: number }>>()
    for (const script of result) {
      for (const fn of script.functions) {
        // The first range is the whole function, with the times it was called.
        const whole = fn.ranges[0]
        if (whole === undefined || whole.count === 0) continue
        const file = fileOf(script.url)
        const runs = byFile.get(file) ?? []
        // Inside a package, which of its files: its functions are one row of the table, and a name alone is ambiguous.
        const within = /node_modules\/(?:@[^/]+\/)?[^/]+\/(.+)$/.exec(script.url)?.[1]
        const name = `${fn.functionName || "(anonymous)"}:${whole.startOffset}${within !== undefined ? ` (${within})` : ""}`
        runs.push({ name, calls: whole.count, bytes: whole.endOffset - whole.startOffset })
        byFile.set(file, runs)
      }
    }
    process.send!({ coverage: [...byFile].map(([file, runs]): [string, FileCode] => [file, { runs }]) })
  })
}
