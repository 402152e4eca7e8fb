/**
 * Node's HTTP server with a lane: a handler that may take a `request` event
 * before the Effect app's listener sees it (src/http/lane/chatLane.ts). A
 * request the lane leaves goes to the app untouched, so every route, limit
 * and error of the API still has one implementation.
 */
import { type IncomingMessage, Server, type ServerOptions, type ServerResponse } from "node:http"
import { Context } from "effect"

/** Takes the request and returns true, or returns false having touched nothing. */
export type Lane = (request: IncomingMessage, response: ServerResponse) => boolean

export class LaneServer extends Server {
  lane: Lane | undefined = undefined

  constructor(options: ServerOptions) {
    super(options)
  }

  override emit(event: string | symbol, ...args: Array<any>): boolean {
    if (event === "request" && this.lane !== undefined && this.lane(args[0], args[1])) return true
    return super.emit(event as string, ...args)
  }
}

/** The server the app listens on, for the lane to attach to. */
export class ServerWithLane extends Context.Tag("svc/ServerWithLane")<ServerWithLane, LaneServer>() {}
