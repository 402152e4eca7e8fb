/**
 * The operator CLI's commands. They call the same Accounts and ApiKeys
 * services as the admin API, validate with the API's schemas (src/cli/flags.ts
 * tells a problem in words naming the flag) and print the API's records as
 * JSON on stdout. Any failure is one line on stderr (`svc: not_found: No
 * account acct_x.`); src/cli.ts runs them as a process that then exits with 1.
 * Every command and flag has a description for `--help`; styles appear only
 * on a terminal (src/cli/plainOutput.ts).
 */
import { Args, Command, Options, ValidationError } from "@effect/cli"
import { Cause, Console, Effect, type Layer, Option } from "effect"
import { Accounts } from "../../services/Accounts.ts"
import { Agents } from "../../services/Agents.ts"
import { ApiKeys } from "../../services/ApiKeys.ts"
import { codeOf, isApiError } from "../../services/ApiError.ts"
import { ConfigInvalid } from "../../services/Config.ts"
import { SealedPrompts } from "../../services/SealedPrompts.ts"
import { ListParams, pageRequestOf } from "../api/Lists.ts"
import { AddCredits, CreateAccount, CreateKey, SetAccountLimits, UpdateKeyLimits } from "../api/Records.ts"
import {
  toAccountLimitsRecord,
  toAccountList,
  toAccountRecord,
  toKeyList,
  toKeyRecord,
  toLedgerRecord
} from "../handlers/Admin.ts"
import { configLine } from "../start/failureLines.ts"
import { agentCommands } from "./agentCommands.ts"
import { decodeFlags, limitFlag, limitValue, numberOrText, pageFlags } from "./flags.ts"
import { type Colour, colourOfProcess, withColourWhere } from "./plainOutput.ts"

/** What the commands need: the app's services (the database opens only once a command's input is valid). */
export type OperatorServices = Layer.Layer<Accounts | ApiKeys | SealedPrompts | Agents, unknown>

const described = (description: string) => Command.withDescription(description)

/** The `svc` command tree, running each command against `services`. */
const commandsWith = (services: OperatorServices) => {
  /** Runs against the services and prints the record. */
  const output = <A, E>(effect: Effect.Effect<A, E, Accounts | ApiKeys | SealedPrompts | Agents>) =>
    effect.pipe(
      Effect.provide(services),
      Effect.flatMap((record) => Console.log(JSON.stringify(record, null, 2)))
    )

  const accountId = Args.text({ name: "account_id" }).pipe(Args.withDescription("The account's id (acct_...)"))
  const keyId = Args.text({ name: "key_id" }).pipe(Args.withDescription("The key's id (key_..., not the secret)"))
  const pageOf = (flags: { readonly limit: Option.Option<string>; readonly cursor: Option.Option<string> }) =>
    Effect.map(
      decodeFlags(ListParams, { limit: Option.getOrUndefined(flags.limit), cursor: Option.getOrUndefined(flags.cursor) }),
      pageRequestOf
    )

  const accountsCreate = Command.make(
    "create",
    {
      name: Options.text("name").pipe(Options.withDescription("The account's name, 1 to 200 characters")),
      credit: Options.text("credit").pipe(Options.withPseudoName("usd"), Options.withDescription("First credit in USD, e.g. 25.00"), Options.optional)
    },
    ({ credit, name }) =>
      Effect.flatMap(decodeFlags(CreateAccount, { name, credit_usd: Option.getOrUndefined(credit) }), (input) =>
        output(Effect.flatMap(Accounts, (accounts) =>
          Effect.map(accounts.create({ name: input.name, credit: input.credit_usd }), toAccountRecord))))
  ).pipe(described("Open an account, optionally with a first credit; prints the account"))

  const accountsShow = Command.make("show", { accountId }, ({ accountId }) =>
    output(Effect.flatMap(Accounts, (accounts) => Effect.map(accounts.get(accountId), toAccountRecord)))).pipe(
      described("Print an account with its balance, reserved and available USD")
    )

  const accountsList = Command.make("list", pageFlags, (flags) =>
    Effect.flatMap(pageOf(flags), (page) =>
      output(Effect.flatMap(Accounts, (accounts) => Effect.map(accounts.list(page), toAccountList))))).pipe(
      described("List accounts, newest first, a page at a time (pass next_cursor as --cursor for the next page)")
    )

  const accountsLimits = Command.make(
    "limits",
    {
      accountId,
      concurrency: Options.text("concurrency").pipe(
        Options.withPseudoName("n|none"),
        Options.withDescription(`Concurrent calls at most, or "none" for the config's default`)
      )
    },
    ({ accountId, concurrency }) =>
      Effect.flatMap(decodeFlags(SetAccountLimits, { concurrency: limitValue(Option.some(concurrency)) }), (change) =>
        output(Effect.flatMap(ApiKeys, (keys) =>
          Effect.map(keys.setAccountConcurrency(accountId, change.concurrency), toAccountLimitsRecord))))
  ).pipe(described("Set or remove an account's own cap on concurrent calls"))

  const keysCreate = Command.make(
    "create",
    {
      accountId,
      scopes: Options.text("scope").pipe(
        Options.withPseudoName("scope"),
        Options.withDescription("chat, agents, monitoring or admin; repeat for more"),
        Options.repeated
      ),
      name: Options.text("name").pipe(Options.withDescription("A name to recognise the key by"), Options.optional),
      rpm: Options.text("rpm").pipe(Options.withPseudoName("n"), Options.withDescription("Requests per minute (default: the config's)"), Options.optional),
      tpm: Options.text("tpm").pipe(Options.withPseudoName("n"), Options.withDescription("Tokens per minute (default: the config's)"), Options.optional)
    },
    ({ accountId, name, rpm, scopes, tpm }) =>
      Effect.flatMap(
        decodeFlags(CreateKey, {
          scopes,
          name: Option.getOrUndefined(name),
          rpm: Option.getOrUndefined(Option.map(rpm, numberOrText)),
          tpm: Option.getOrUndefined(Option.map(tpm, numberOrText))
        }),
        (input) =>
          output(Effect.flatMap(ApiKeys, (keys) =>
            Effect.map(keys.create(accountId, input), ({ key, record }) => ({ ...toKeyRecord(record), key }))))
      )
  ).pipe(described("Issue a key for an account; prints it with its secret, shown this once only"))

  const keysList = Command.make("list", { accountId, ...pageFlags }, ({ accountId, ...flags }) =>
    Effect.flatMap(pageOf(flags), (page) =>
      output(Effect.flatMap(ApiKeys, (keys) => Effect.map(keys.list(accountId, page), toKeyList))))).pipe(
      described("List an account's keys (revoked ones too, never a secret), newest first, a page at a time")
    )

  const keysLimits = Command.make(
    "limits",
    { keyId, rpm: limitFlag("rpm", "Requests per minute"), tpm: limitFlag("tpm", "Tokens per minute") },
    ({ keyId, rpm, tpm }) =>
      Effect.flatMap(decodeFlags(UpdateKeyLimits, { rpm: limitValue(rpm), tpm: limitValue(tpm) }), (change) =>
        output(Effect.flatMap(ApiKeys, (keys) => Effect.map(keys.setLimits(keyId, change), toKeyRecord))))
  ).pipe(described("Change a key's own rate limits, from its next request on"))

  const keysRevoke = Command.make("revoke", { keyId }, ({ keyId }) =>
    output(Effect.flatMap(ApiKeys, (keys) => Effect.map(keys.revoke(keyId), toKeyRecord)))).pipe(
      described("Revoke a key; it is refused from its next request on")
    )

  const creditsAdd = Command.make(
    "add",
    {
      accountId,
      amount: Options.text("amount").pipe(Options.withPseudoName("usd"), Options.withDescription("USD, e.g. 10.50")),
      reference: Options.text("reference").pipe(Options.withDescription("Idempotency reference, e.g. an invoice id"))
    },
    ({ accountId, amount, reference }) =>
      Effect.flatMap(decodeFlags(AddCredits, { amount_usd: amount, reference }), (input) =>
        output(Effect.flatMap(Accounts, (accounts) =>
          Effect.map(
            accounts.addCredit(accountId, { amount: input.amount_usd, reference: input.reference }),
            toLedgerRecord
          ))))
  ).pipe(described("Add credit to an account, once per reference; prints the ledger entry"))

  /** Prints the new public key; prompts sealed to the old one keep opening for the grace period. */
  const promptKeysRotate = Command.make("rotate", {}, () => output(Effect.flatMap(SealedPrompts, (sealed) => sealed.rotate)))
    .pipe(described("Make a new prompt-sealing key and print its public half; the old one opens prompts for a grace period"))

  // The stored operator key is replaced, never read back: only its hash is kept.
  const adminKeyRotate = Command.make("rotate", {}, () =>
    output(
      Effect.flatMap(ApiKeys, (keys) => keys.issueOperatorKey("replace")).pipe(
        Effect.map((key) => ({ object: "operator_key", key: Option.getOrThrow(key), replaces_previous: true }))
      )
    )
  ).pipe(described("Make a new operator key for the admin API and print it once; the previous one stops working"))

  return Command.make("svc").pipe(
    described("Operate the svc gateway: accounts, API keys, credits, agents, prompt-sealing keys and the operator key, on its configured database"),
    Command.withSubcommands([
      Command.make("accounts").pipe(
        described("Customer accounts"),
        Command.withSubcommands([accountsCreate, accountsShow, accountsList, accountsLimits])
      ),
      Command.make("keys").pipe(
        described("API keys of an account"),
        Command.withSubcommands([keysCreate, keysList, keysLimits, keysRevoke])
      ),
      Command.make("credits").pipe(described("Prepaid credit"), Command.withSubcommands([creditsAdd])),
      agentCommands(output, pageOf),
      Command.make("prompt-keys").pipe(
        described("The key that callers seal encrypted prompts to (GET /v1/privacy/keys)"),
        Command.withSubcommands([promptKeysRotate])
      ),
      Command.make("admin-key").pipe(
        described("The stored operator key (admin scope) used when SVC_ADMIN_KEY is not set"),
        Command.withSubcommands([adminKeyRotate])
      )
    ])
  )
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
 * Styles reach only the streams `colour` allows (by default: terminals, unless `NO_COLOR` is set).
 */
export const runCli = (services: OperatorServices, colour: Colour = colourOfProcess()) => {
  const run = Command.run(commandsWith(services), { name: "svc", version: "0.1.0" })
  return (argv: ReadonlyArray<string>) => run(argv).pipe(Effect.tapErrorCause(report), withColourWhere(colour))
}
