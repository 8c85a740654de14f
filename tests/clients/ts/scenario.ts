// The client scenario, written against the TypeScript client generated from platpay's live /openapi.json
// (openapi-typescript types + openapi-fetch): run by tests/e2e/test_generated_clients.py after
// `tsc --noEmit` has type-checked it. Usage: node build/scenario.js BASE_URL CLIENT_ID CLIENT_SECRET
import createClient from "openapi-fetch";
import type { components, paths } from "./generated/schema.js";

type Schemas = components["schemas"];

const [baseUrl, clientId, clientSecret] = process.argv.slice(2);
const client = createClient<paths>({
  baseUrl,
  headers: { Authorization: `Basic ${btoa(`${clientId}:${clientSecret}`)}` },
});
const run = Math.random().toString(36).slice(2, 10);

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`scenario failed: ${message}`);
}

async function createCustomer(suffix: string): Promise<Schemas["IndividualCustomer"]> {
  const body: Schemas["IndividualCustomerCreateRequest"] = {
    customerType: "INDIVIDUAL",
    platformCustomerId: `ts-${run}-${suffix}`,
    currencies: ["USD", "MXN"],
    fullName: "Jane Doe",
    birthDate: "1990-04-12",
    address: { line1: "1 Main St", postalCode: "62701", country: "US" },
  };
  const { data, error, response } = await client.POST("/2025-10-13/customers", { body });
  check(data && response.status === 201, `createCustomer: ${response.status} ${JSON.stringify(error)}`);
  check(data.customerType === "INDIVIDUAL", "an individual is an IndividualCustomer");
  return data;
}

async function externalAccount(customerId: string, currency: string, accountInfo: Record<string, unknown>) {
  const body: Schemas["ExternalAccountCreateRequest"] = {
    customerId,
    currency,
    accountInfo,
    defaultUmaDepositAccount: false,
  };
  const { data, error } = await client.POST("/2025-10-13/customers/external-accounts", { body });
  check(data, `createCustomerExternalAccount: ${JSON.stringify(error)}`);
  return data;
}

async function main(): Promise<void> {
  const jane = await createCustomer("a");
  const john = await createCustomer("b");

  const first = await client.GET("/2025-10-13/customers", { params: { query: { limit: 1 } } });
  check(first.data?.hasMore && first.data.nextCursor, "the first page of one says there is more");
  const second = await client.GET("/2025-10-13/customers", {
    params: { query: { limit: 1, cursor: first.data.nextCursor } },
  });
  check(second.data && second.data.data[0].id !== first.data.data[0].id, "the next page is another customer");
  check(first.data.data[0].id === john.id, "newest first");

  const accounts = await client.GET("/2025-10-13/customers/internal-accounts", {
    params: { query: { customerId: jane.id, currency: "USD" } },
  });
  const usd = accounts.data?.data[0];
  check(usd && usd.type === "INTERNAL_FIAT", "the customer has a USD internal account");

  const funded = await client.POST("/2025-10-13/sandbox/internal-accounts/{accountId}/fund", {
    params: { path: { accountId: usd.id } },
    body: { amount: 100_000 },
  });
  check(funded.data?.balance.amount === 100_000, `sandboxFundInternalAccount: ${JSON.stringify(funded.error)}`);

  const bank = await externalAccount(jane.id, "USD", {
    accountType: "USD_ACCOUNT",
    accountNumber: "123456789",
    routingNumber: "011000015",
    beneficiary: { beneficiaryType: "INDIVIDUAL", fullName: "Jane Doe" },
  });

  const transferBody: Schemas["TransferOutRequest"] = {
    source: { accountId: usd.id },
    destination: { accountId: bank.id },
    amount: 2_500,
  };
  const key = `ts-transfer-${run}`;
  const transfer = await client.POST("/2025-10-13/transfer-out", {
    params: { header: { "Idempotency-Key": key } },
    body: transferBody,
  });
  check(transfer.data && transfer.response.status === 201, `createTransferOut: ${JSON.stringify(transfer.error)}`);
  check(transfer.data.type === "OUTGOING", "a transfer out is an OutgoingTransaction");
  const replay = await client.POST("/2025-10-13/transfer-out", {
    params: { header: { "Idempotency-Key": key } },
    body: transferBody,
  });
  check(replay.data?.id === transfer.data.id, "the same Idempotency-Key replays the first transfer");

  const clabe = await externalAccount(jane.id, "MXN", {
    accountType: "MXN_ACCOUNT",
    clabeNumber: process.env.PLATPAY_SCENARIO_CLABE ?? "",
    beneficiary: { beneficiaryType: "INDIVIDUAL", fullName: "Juan Pérez" },
  });
  const quoteBody: Schemas["QuoteRequest"] = {
    source: { sourceType: "ACCOUNT", accountId: usd.id },
    destination: { destinationType: "ACCOUNT", accountId: clabe.id },
    lockedCurrencySide: "SENDING",
    lockedCurrencyAmount: 10_000,
  };
  const quote = await client.POST("/2025-10-13/quotes", { body: quoteBody });
  check(quote.data && quote.data.status === "PENDING", `createQuote: ${JSON.stringify(quote.error)}`);
  const executed = await client.POST("/2025-10-13/quotes/{quoteId}/execute", {
    params: { path: { quoteId: quote.data.id }, header: { "Idempotency-Key": `ts-execute-${run}` } },
  });
  check(executed.data && executed.data.status !== "PENDING", `executeQuote: ${JSON.stringify(executed.error)}`);

  const transactions = await client.GET("/2025-10-13/transactions", {
    params: { query: { customerId: jane.id, limit: 100 } },
  });
  const ids = new Set(transactions.data?.data.map((transaction) => transaction.id));
  check(ids.has(transfer.data.id) && ids.has(quote.data.transactionId), "both payments are listed");

  const missing = await client.GET("/2025-10-13/customers/{customerId}", {
    params: { path: { customerId: "Customer:00000000-0000-7000-8000-000000000000" } },
  });
  const error = missing.error;
  check(missing.response.status === 404 && error?.status === 404, "an unknown customer is a 404");
  const notFound: Schemas["Error404"] = error; // the error union narrowed to Error404 by its status
  check(notFound.code === "USER_NOT_FOUND", `a 404's code: ${notFound.code}`);

  console.log(JSON.stringify({ scenario: "ok", customer: jane.id, transfer: transfer.data.id }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
