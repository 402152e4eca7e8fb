/** The provider plugins' registry Layer (see `providers/index.ts`), as the app's composition imports it. */
export { Plugins } from "./providers/index.ts"
