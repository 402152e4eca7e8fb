/**
 * The operator CLI's commands. They call the same Accounts and ApiKeys
 * services as the admin API, validate with the API's schemas and print the
 * API's records as JSON on stdout. Any failure is one line on stderr
 * (`svc: not_found: No account acct_x.`); src/cli.ts runs them as a process
 * that then exits with 1.
 */
import { Args, Command, Options, ValidationError } from "@effect/cli"
import { Cause, Console, Effect, type Layer, Option, ParseResult, Schema } from "effect"
import { Accounts } from "../../services/Accounts.ts"
import { ApiKeys } from "../../services/ApiKeys.ts"
import { codeOf, InvalidRequest, isApiError } from "../../services/ApiError.ts"
import { ConfigInvalid } from "../../services/Config.ts"
import { SealedPrompts } from "../../services/SealedPrompts.ts"
import { AddCredits, CreateAccount, CreateKey, SetAccountLimits, UpdateKeyLimits } from "../api/Records.ts"
import { toAccountLimitsRecord, toAccountRecord, toKeyRecord, toLedgerRecord } from "../handlers/Admin.ts"
import { configLine } from "../startFailure.ts"

/** What the commands need: the app's services (the database opens only once a command's input is valid). */
export type OperatorServices = Layer.Layer<Accounts | ApiKeys | SealedPrompts, unknown>

/** The flag an operator typed for each API field, so errors name what they can fix. */
const flagOf: Record<string, string> = {
  name: "--name",
  credit_usd: "--credit",
  scopes: "--scope",
  rpm: "--rpm",
  tpm: "--tpm",
  concurrency: "--concurrency",
  amount_usd: "--amount",
  reference: "--reference"
}

/** Decodes the flags with the API's request schema; the first problem becomes an `InvalidRequest`. */
const decode = <A, I>(schema: Schema.Schema<A, I>, input: { readonly [K in keyof I]-?: unknown }) =>
  Effect.mapError(Schema.decodeUnknown(schema, { errors: "first" })(input), (error) => {
    const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
    const path = String(issues[0]?.path)
    const field = String(issues[0]?.path[0] ?? "")
    // A union (such as a scope) fails once per member: together they list what is allowed.
    const reason = issues.filter((issue) => String(issue.path) === path).map((issue) => issue.message).join("; ")
    return new InvalidRequest({ message: `${flagOf[field] ?? field}: ${reason}`, param: field })
  })

/** The `svc` command tree, running each command against `services`. */
const commandsWith = (services: OperatorServices) => {
  /** Runs against the services and prints the record. */
  const output = <A, E>(effect: Effect.Effect<A, E, Accounts | ApiKeys | SealedPrompts>) =>
    effect.pipe(
      Effect.provide(services),
      Effect.flatMap((record) => Console.log(JSON.stringify(record, null, 2)))
    )

  const accountId = Args.text({ name: "account_id" })

  const accountsCreate = Command.make(
    "create",
    {
      name: Options.text("name"),
      credit: Options.text("credit").pipe(Options.withDescription("First credit in USD, e.g. 25.00"), Options.optional)
    },
    ({ credit, name }) =>
      Effect.flatMap(decode(CreateAccount, { name, credit_usd: Option.getOrUndefined(credit) }), (input) =>
        output(Effect.flatMap(Accounts, (accounts) =>
          Effect.map(accounts.create({ name: input.name, credit: input.credit_usd }), toAccountRecord))))
  )

  const accountsShow = Command.make("show", { accountId }, ({ accountId }) =>
    output(Effect.flatMap(Accounts, (accounts) => Effect.map(accounts.get(accountId), toAccountRecord))))

  /** `none` clears a limit; anything else must be a whole number (the schema says what is wrong). */
  const limitFlag = (name: "rpm" | "tpm", what: string) =>
    Options.text(name).pipe(Options.withDescription(`${what}, or "none" to remove the key's own limit`), Options.optional)
  const limitValue = (flag: Option.Option<string>) =>
    Option.match(flag, {
      onNone: () => undefined,
      onSome: (text) => text === "none" ? null : /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text
    })

  const accountsLimits = Command.make(
    "limits",
    {
      accountId,
      concurrency: Options.text("concurrency").pipe(
        Options.withDescription(`Concurrent calls at most, or "none" for the config's default`)
      )
    },
    ({ accountId, concurrency }) =>
      Effect.flatMap(decode(SetAccountLimits, { concurrency: limitValue(Option.some(concurrency)) }), (change) =>
        output(Effect.flatMap(ApiKeys, (keys) =>
          Effect.map(keys.setAccountConcurrency(accountId, change.concurrency), toAccountLimitsRecord))))
  )

  const keysCreate = Command.make(
    "create",
    {
      accountId,
      scopes: Options.text("scope").pipe(
        Options.withDescription("chat, agents, monitoring or admin; repeat for more"),
        Options.repeated
      ),
      name: Options.text("name").pipe(Options.optional),
      rpm: Options.integer("rpm").pipe(Options.withDescription("Requests per minute"), Options.optional),
      tpm: Options.integer("tpm").pipe(Options.withDescription("Tokens per minute"), Options.optional)
    },
    ({ accountId, name, rpm, scopes, tpm }) =>
      Effect.flatMap(
        decode(CreateKey, {
          scopes,
          name: Option.getOrUndefined(name),
          rpm: Option.getOrUndefined(rpm),
          tpm: Option.getOrUndefined(tpm)
        }),
        (input) =>
          output(Effect.flatMap(ApiKeys, (keys) =>
            Effect.map(keys.create(accountId, input), ({ key, record }) => ({ ...toKeyRecord(record), key }))))
      )
  )

  const keysLimits = Command.make(
    "limits",
    { keyId: Args.text({ name: "key_id" }), rpm: limitFlag("rpm", "Requests per minute"), tpm: limitFlag("tpm", "Tokens per minute") },
    ({ keyId, rpm, tpm }) =>
      Effect.flatMap(decode(UpdateKeyLimits, { rpm: limitValue(rpm), tpm: limitValue(tpm) }), (change) =>
        output(Effect.flatMap(ApiKeys, (keys) => Effect.map(keys.setLimits(keyId, change), toKeyRecord))))
  )

  const keysRevoke = Command.make("revoke", { keyId: Args.text({ name: "key_id" }) }, ({ keyId }) =>
    output(Effect.flatMap(ApiKeys, (keys) => Effect.map(keys.revoke(keyId), toKeyRecord))))

  const creditsAdd = Command.make(
    "add",
    {
      accountId,
      amount: Options.text("amount").pipe(Options.withDescription("USD, e.g. 10.50")),
      reference: Options.text("reference").pipe(Options.withDescription("Idempotency reference, e.g. an invoice id"))
    },
    ({ accountId, amount, reference }) =>
      Effect.flatMap(decode(AddCredits, { amount_usd: amount, reference }), (input) =>
        output(Effect.flatMap(Accounts, (accounts) =>
          Effect.map(
            accounts.addCredit(accountId, { amount: input.amount_usd, reference: input.reference }),
            toLedgerRecord
          ))))
  )

  /** Prints the new public key; prompts sealed to the old one keep opening for the grace period. */
  const promptKeysRotate = Command.make("rotate", {}, () => output(Effect.flatMap(SealedPrompts, (sealed) => sealed.rotate)))

  return Command.make("svc").pipe(Command.withSubcommands([
    Command.make("accounts").pipe(Command.withSubcommands([accountsCreate, accountsShow, accountsLimits])),
    Command.make("keys").pipe(Command.withSubcommands([keysCreate, keysLimits, keysRevoke])),
    Command.make("credits").pipe(Command.withSubcommands([creditsAdd])),
    Command.make("prompt-keys").pipe(Command.withSubcommands([promptKeysRotate]))
  ]))
}

const lineOf = (error: unknown) =>
  isApiError(error)
    ? `${codeOf(error)}: ${error.message}`
    : error instanceof ConfigInvalid
    ? configLine(error)
    : String(error instanceof Error ? error.message : error).split("\n")[0]

/** Usage errors are already printed by @effect/cli; everything else gets its one line here. */
const report = (cause: Cause.Cause<unknown>) => {
  const error = Cause.squash(cause)
  return Cause.isInterruptedOnly(cause) || ValidationError.isValidationError(error)
    ? Effect.void
    : Console.error(`svc: ${lineOf(error)}`)
}

/**
 * Runs the command line `argv` (as `process.argv`: node, script, then arguments) against `services`;
 * a failure is reported in one line on stderr and fails the effect (the process exits with 1).
 */
export const runCli = (services: OperatorServices) => {
  const run = Command.run(commandsWith(services), { name: "svc", version: "0.1.0" })
  return (argv: ReadonlyArray<string>) => run(argv).pipe(Effect.tapErrorCause(report))
}
