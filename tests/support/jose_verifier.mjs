// A small service in another language that trusts webauth's access tokens the
// way docs/tokens.md tells a Node service to: jose's remote JWKS, the issuer,
// the audience, the access-token type, and the revocation feed. Started by
// tests/test_tokens_node.py; prints {"port": N} once it listens on 127.0.0.1.
//
//   node jose_verifier.mjs <issuer> <audience> <jwks url> <feed url>
//
// GET / with "Authorization: Bearer <token>" answers 200 {"sub", "sid"} for a
// token it trusts, else 401 {"error": <jose's code, or SESSION_ENDED>}.
import http from "node:http";
import { createRemoteJWKSet, jwtVerify } from "jose";

const [, , issuer, audience, jwksUrl, feedUrl] = process.argv;

// No cache between requests here, so that the test sees a rotation at once; a
// real service keeps jose's defaults (a key set is kept ten minutes, and an
// unknown kid refetches it at most every 30 seconds).
const keys = createRemoteJWKSet(new URL(jwksUrl), { cooldownDuration: 0, cacheMaxAge: 0 });

const ended = new Set();
let since = null;

async function followFeed() {
  let url = since === null ? feedUrl : `${feedUrl}?since=${since}`;
  for (let page = 0; page < 20; page++) {
    const answer = await fetch(url);
    if (!answer.ok) throw new Error(`feed answered ${answer.status}`);
    const body = await answer.json();
    for (const entry of body.ended) ended.add(entry.sid);
    if (!body.next) {
      since = body.until;
      return;
    }
    url = `${feedUrl}?after=${encodeURIComponent(body.next)}`;
  }
}

const server = http.createServer(async (request, response) => {
  const header = request.headers.authorization ?? "";
  const token = header.startsWith("Bearer ") ? header.slice(7) : "";
  try {
    const { payload } = await jwtVerify(token, keys, {
      issuer,
      audience,
      typ: "at+jwt",
      algorithms: ["ES256", "ES384", "EdDSA", "RS256", "PS256"],
      clockTolerance: 30,
      requiredClaims: ["sub", "sid", "exp", "iat"],
    });
    await followFeed();
    if (ended.has(payload.sid)) {
      throw Object.assign(new Error("the session has ended"), { code: "SESSION_ENDED" });
    }
    response.writeHead(200, { "content-type": "application/json" });
    response.end(JSON.stringify({ sub: payload.sub, sid: payload.sid }));
  } catch (error) {
    response.writeHead(401, { "content-type": "application/json" });
    response.end(JSON.stringify({ error: error.code ?? error.name }));
  }
});

server.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ port: server.address().port }));
});
