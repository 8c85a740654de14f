// A wallet's life against a live platpay, as an end-user app does it with the public client libraries:
// @turnkey/crypto seals the OTP attempt and opens the session key and the export; @turnkey/api-key-stamper
// stamps every signed retry. Environment: PLATPAY_URL (base path included), PLATPAY_CLIENT_ID,
// PLATPAY_CLIENT_SECRET, PLATPAY_ACCOUNT_ID (an EMBEDDED_WALLET account of the sandbox). Prints one JSON line.
import { createHash } from "node:crypto";
import { ApiKeyStamper } from "@turnkey/api-key-stamper";
import {
  decryptCredentialBundle,
  encryptOtpCodeToBundle,
  generateP256KeyPair,
  getPublicKey,
  hpkeDecrypt,
  verifyOtpVerificationToken,
} from "@turnkey/crypto";

const base = process.env.PLATPAY_URL;
const basic = "Basic " + Buffer.from(`${process.env.PLATPAY_CLIENT_ID}:${process.env.PLATPAY_CLIENT_SECRET}`).toString("base64");
const accountId = process.env.PLATPAY_ACCOUNT_ID;
const steps = [];

const hex = (bytes) => Buffer.from(bytes).toString("hex");
const fromHex = (text) => new Uint8Array(Buffer.from(text, "hex"));

async function call(method, path, body, headers = {}) {
  const response = await fetch(base + path, {
    method,
    headers: { Authorization: basic, "Content-Type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

function expect(result, status, what) {
  if (result.status !== status) {
    throw new Error(`${what}: expected ${status}, got ${result.status} ${JSON.stringify(result.body)}`);
  }
  return result.body;
}

function stamperFor(privateKeyHex) {
  return new ApiKeyStamper({ apiPublicKey: hex(getPublicKey(fromHex(privateKeyHex), true)), apiPrivateKey: privateKeyHex });
}

// The signed-retry pattern: the first call (202), the stamp over payloadToSign, the same call again.
async function signed(method, path, body, stamper, status) {
  const challenge = expect(await call(method, path, body), 202, `${method} ${path} (first call)`);
  const stamp = await stamper.stamp(challenge.payloadToSign);
  const headers = { "Svc-Wallet-Signature": stamp.stampHeaderValue, "Request-Id": challenge.requestId };
  return expect(await call(method, path, body, headers), status, `${method} ${path} (signed retry)`);
}

// A sandbox OIDC token: JWT-shaped with a dummy signature; nonce = sha256(clientPublicKey hex).
function oidcToken(clientPublicKey) {
  const b64 = (value) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const now = Math.floor(Date.now() / 1000);
  const claims = { iss: "https://accounts.google.com", aud: "interop.apps.googleusercontent.com", sub: "interop-user",
    email: "interop@example.com", iat: now, exp: now + 3600 };
  if (clientPublicKey) claims.nonce = createHash("sha256").update(clientPublicKey).digest("hex");
  return `${b64({ alg: "RS256", kid: "k", typ: "JWT" })}.${b64(claims)}.${Buffer.from("dummy").toString("base64url")}`;
}

// 1. EMAIL_OTP bootstrap: seal {otp_code, public_key} to the target, stamp the verificationToken with the TEK.
const credentials = expect(await call("GET", `/auth/credentials?accountId=${encodeURIComponent(accountId)}`), 200, "list");
const emailOtp = credentials.data.find((c) => c.type === "EMAIL_OTP");
const issued = expect(await call("POST", `/auth/credentials/${emailOtp.id}/challenge`, {}), 200, "challenge");
// The bundle is signed by the environment's enclave key; an app pins that key (here: the bundle's own).
const enclaveKey = JSON.parse(issued.otpEncryptionTargetBundle).enclaveQuorumPublic;
const tek = generateP256KeyPair();
const encryptedOtpBundle = await encryptOtpCodeToBundle("000000", issued.otpEncryptionTargetBundle,
  tek.publicKeyUncompressed, enclaveKey);
const verifyPath = `/auth/credentials/${emailOtp.id}/verify`;
const otpChallenge = expect(await call("POST", verifyPath, { type: "EMAIL_OTP", encryptedOtpBundle }), 202, "verify");
const claims = await verifyOtpVerificationToken(otpChallenge.payloadToSign, enclaveKey);
if (claims.public_key !== hex(getPublicKey(fromHex(tek.privateKey), true))) throw new Error("token not bound to the TEK");
const otpStamp = await stamperFor(tek.privateKey).stamp(otpChallenge.payloadToSign);
const otpSession = expect(await call("POST", verifyPath, { type: "EMAIL_OTP", encryptedOtpBundle },
  { "Svc-Wallet-Signature": otpStamp.stampHeaderValue, "Request-Id": otpChallenge.requestId }), 200, "verify retry");
if (otpSession.encryptedSessionSigningKey) throw new Error("an EMAIL_OTP session carries no key bundle");
steps.push("email_otp_login");
const tekStamper = stamperFor(tek.privateKey);

// 2. Wallet privacy, stamped by the TEK session.
const account = await signed("PATCH", `/internal-accounts/${accountId}`, { privateEnabled: true }, tekStamper, 200);
if (account.privateEnabled !== true) throw new Error("privacy not set");
steps.push("privacy_on");

// 3. An OAUTH credential added by signed retry, then a login sealing a session key to a client key.
const oauth = await signed("POST", "/auth/credentials", { type: "OAUTH", accountId, oidcToken: oidcToken(null) }, tekStamper, 201);
steps.push("oauth_added");
const loginKey = generateP256KeyPair();
const oauthSession = expect(await call("POST", `/auth/credentials/${oauth.id}/verify`,
  { type: "OAUTH", oidcToken: oidcToken(loginKey.publicKeyUncompressed), clientPublicKey: loginKey.publicKeyUncompressed }),
  200, "oauth verify");
const oauthKey = decryptCredentialBundle(oauthSession.encryptedSessionSigningKey, loginKey.privateKey);
steps.push("oauth_login");

// 3b. The client-held-key flow: a compressed clientPublicKey is the session's key itself, so the answer
// carries no key bundle and the client's own private key stamps the session's retries.
const heldKey = generateP256KeyPair();
const heldSession = expect(await call("POST", `/auth/credentials/${oauth.id}/verify`,
  { type: "OAUTH", oidcToken: oidcToken(heldKey.publicKey), clientPublicKey: heldKey.publicKey }),
  200, "oauth verify (client-held key)");
if (heldSession.encryptedSessionSigningKey) throw new Error("a client-held-key session carries no key bundle");
const cleared = await signed("PATCH", `/internal-accounts/${accountId}`, { privateEnabled: false },
  stamperFor(heldKey.privateKey), 200);
if (cleared.privateEnabled !== false) throw new Error("privacy not cleared");
steps.push("oauth_login_client_held_key");

// 4. Refresh the OAUTH session: a new key sealed to a new client key.
const refreshKey = generateP256KeyPair();
const refreshed = await signed("POST", `/auth/sessions/${oauthSession.id}/refresh`,
  { clientPublicKey: refreshKey.publicKeyUncompressed }, stamperFor(oauthKey), 200);
const refreshedKey = decryptCredentialBundle(refreshed.encryptedSessionSigningKey, refreshKey.privateKey);
steps.push("session_refreshed");

// 5. Export, stamped by the refreshed session; the mnemonic opened with a fresh key (sandbox: unsigned).
const exportKey = generateP256KeyPair();
const exported = await signed("POST", `/internal-accounts/${accountId}/export`,
  { clientPublicKey: exportKey.publicKeyUncompressed }, stamperFor(refreshedKey), 200);
const envelope = JSON.parse(exported.encryptedWalletCredentials);
const data = JSON.parse(Buffer.from(envelope.data, "hex").toString());
const mnemonic = new TextDecoder().decode(hpkeDecrypt({
  ciphertextBuf: fromHex(data.ciphertext),
  encappedKeyBuf: fromHex(data.encappedPublic),
  receiverPriv: exportKey.privateKey,
}));
steps.push("export_opened");

// 6. The EMAIL_OTP session revoked, stamped by the refreshed session; then 404 for good.
const revoke = await signed("DELETE", `/auth/sessions/${otpSession.id}`, undefined, stamperFor(refreshedKey), 204);
expect(await call("DELETE", `/auth/sessions/${otpSession.id}`), 404, "revoked session");
if (revoke !== null) throw new Error("204 has no body");
steps.push("session_revoked");

console.log(JSON.stringify({ steps, mnemonic }));
