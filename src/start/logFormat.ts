/**
 * How the gateway writes its log lines: `LOG_FORMAT=json` (one JSON object a
 * line, what log collectors read) or `LOG_FORMAT=logfmt` (Effect's default,
 * easier on a person's eyes); unset, JSON unless standard output is a terminal.
 */
import { Layer, Logger } from "effect"

export const logFormat = (env: Record<string, string | undefined>, terminal: boolean): Layer.Layer<never> => {
  const format = env.LOG_FORMAT ?? (terminal ? "logfmt" : "json")
  return format === "json" ? Logger.json : Layer.empty
}
