// The bundle formats made by platpay's Python code, read by @turnkey/crypto's own functions, and the other
// way round. Input on stdin (JSON): {exportBundle, exportKey, organizationId, enclaveKey, credentialBundle,
// credentialKey, targetBundle, tekPublic, payload, stampKey}. Prints one JSON line of what the library produced.
import { ApiKeyStamper } from "@turnkey/api-key-stamper";
import {
  decryptCredentialBundle,
  decryptExportBundle,
  encryptOtpCodeToBundle,
  getPublicKey,
} from "@turnkey/crypto";

const input = JSON.parse(await new Promise((resolve) => {
  let text = "";
  process.stdin.on("data", (chunk) => { text += chunk; });
  process.stdin.on("end", () => resolve(text));
}));
const hex = (bytes) => Buffer.from(bytes).toString("hex");

const mnemonic = await decryptExportBundle({
  exportBundle: input.exportBundle,
  embeddedKey: input.exportKey,
  organizationId: input.organizationId,
  dangerouslyOverrideSignerPublicKey: input.enclaveKey,
  returnMnemonic: true,
});
const sessionKey = decryptCredentialBundle(input.credentialBundle, input.credentialKey);
const encryptedOtpBundle = await encryptOtpCodeToBundle("000000", input.targetBundle, input.tekPublic, input.enclaveKey);
const stamper = new ApiKeyStamper({
  apiPublicKey: hex(getPublicKey(Buffer.from(input.stampKey, "hex"), true)),
  apiPrivateKey: input.stampKey,
});
const stamps = [];
for (let i = 0; i < 8; i += 1) stamps.push((await stamper.stamp(input.payload)).stampHeaderValue);
console.log(JSON.stringify({ mnemonic, sessionKey, encryptedOtpBundle, stamps }));
