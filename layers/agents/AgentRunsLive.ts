/**
 * An agent run, composed from the chat path's stages (docs/architecture.md):
 *
 *   agent, conversation → Admission → RoutePlanner → Billing.hold (generation + query embedding)
 *     → conversation slot → embed the question → Retrieval → Upstream → Billing.settle (line items)
 *     → turns written
 *
 * The hold is taken before anything is spent, for the request with its
 * history and a knowledge budget (runPrompt.ts), so what retrieval finds is
 * always covered (runPreparation.ts). A run that fails bills nothing (its
 * hold is released), as a failed chat call does, and a conversation it
 * started is given back. A streamed run is runStream.ts.
 *
 * Turns are kept only for runs served at `standard_route`: for a stronger
 * class the gateway stores no prompt or answer text, so such a conversation
 * continues without history.
 */
import { Effect, Layer } from "effect"
import { Admission } from "../../services/Admission.ts"
import { AgentRuns, type RunResult } from "../../services/AgentRuns.ts"
import { Agents } from "../../services/Agents.ts"
import { Billing } from "../../services/Billing.ts"
import { CallRecorder } from "../../services/CallRecorder.ts"
import { Catalogue } from "../../services/Catalogue.ts"
import { AppConfig } from "../../services/Config.ts"
import { Conversations } from "../../services/Conversations.ts"
import { Ids } from "../../services/Ids.ts"
import { Pricing } from "../../services/Pricing.ts"
import { PrivacyPolicy } from "../../services/PrivacyPolicy.ts"
import { Retrieval } from "../../services/Retrieval.ts"
import { RoutePlanner } from "../../services/RoutePlanner.ts"
import { Transcripts } from "../../services/Transcripts.ts"
import { Upstream } from "../../services/Upstream.ts"
import { endCompletion } from "../gateway/completionEnd.ts"
import { routesFailed } from "../gateway/plannedCall.ts"
import { discardNew, ground, keepTurns, prepare } from "./runPreparation.ts"
import { streamRun } from "./runStream.ts"

const ENDPOINT = "/v1/agents/runs"

export const AgentRunsLive = Layer.effect(
  AgentRuns,
  Effect.gen(function*() {
    const ids = yield* Ids
    const recorder = yield* CallRecorder
    const pricing = yield* Pricing
    const services = {
      agents: yield* Agents,
      conversations: yield* Conversations,
      retrieval: yield* Retrieval,
      catalogue: yield* Catalogue,
      pricing,
      admission: yield* Admission,
      planner: yield* RoutePlanner,
      recorder,
      deadlines: (yield* AppConfig).file.routing.deadline,
      billing: yield* Billing,
      transcripts: yield* Transcripts,
      upstream: yield* Upstream,
      privacyPolicy: yield* PrivacyPolicy,
      ids,
      newMessageId: () => ids.make("msg")
    }

    return AgentRuns.of({
      run: (principal, sent) =>
        Effect.gen(function*() {
          const run = yield* prepare(services, principal, sent)
          return yield* services.billing.withHold(principal, run.amount, (hold) =>
            Effect.gen(function*() {
              const { admitted, before, conversation, sources } = yield* ground(services, run)
              const { completion, receipt } = yield* services.upstream.complete(run.route.targets, admitted.request).pipe(
                Effect.catchAll(routesFailed(recorder, admitted, run.route)),
                Effect.flatMap((answered) =>
                  endCompletion(services, { admitted, route: run.route, hold }, answered, { endpoint: ENDPOINT, before })
                ),
                Effect.onError(() => discardNew(services, run, conversation))
              )
              const output = completion.choices[0]?.message.content ?? ""
              const result: RunResult = {
                id: yield* keepTurns(services, run, conversation, output, receipt.id),
                agentId: run.agent.id,
                conversationId: conversation.id,
                output,
                sources,
                usage: { inputTokens: receipt.usage.inputTokens, outputTokens: receipt.usage.outputTokens },
                route: { tier: receipt.tier, model: receipt.model },
                privacy: completion.privacy,
                receipt
              }
              return result
            }))
        }).pipe(Effect.scoped),

      stream: (principal, sent) => Effect.flatMap(prepare(services, principal, sent), (run) => streamRun(services, run, ENDPOINT))
    })
  })
)
