import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // `expect.poll` waits for something that will happen; its default 1 s is not a claim about speed,
    // and a loaded CI machine (two workers and a browser on two cores) can take longer to show it.
    expect: { poll: { timeout: 10_000 } },
    // PGlite and the HTTP servers are CPU-heavy: two workers match the 2-core machines.
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    // Test files share their worker's module graph: each file imported the whole app again
    // otherwise, most of the suite's time. Tests keep their state in their own layers and servers;
    // test/support/layer.ts keeps @effect/vitest's layer blocks from leaking into later files.
    isolate: false
  }
})
