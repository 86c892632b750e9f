// Auth.js (@auth/core) behind node:http: the reference side of benchmarks/bench_authjs.py.
//
//   AUTH_SECRET=... BENCH_USER='{"id":"1",...}' PORT=8000 WORKERS=2 node server.mjs
//
// The primary process forks WORKERS workers (node:cluster) that serve one port,
// 127.0.0.1:PORT, with node:cluster's default scheduling (on Linux the primary
// accepts each connection and hands it to the workers in turn; set
// NODE_CLUSTER_SCHED_POLICY=none to have the workers accept themselves).
//
// Each worker turns every request into a WHATWG Request, hands it to Auth(), and
// writes the Response back: status, every header (each Set-Cookie on its own
// line) and the body. The configuration mirrors the webauth benchmark site: the
// same secret, basePath "/auth", trustHost, and one Credentials provider (id
// "credentials") whose authorize accepts exactly one user, compared in constant
// time.

import cluster from "node:cluster";
import { timingSafeEqual } from "node:crypto";
import http from "node:http";

import { Auth } from "@auth/core";
import Credentials from "@auth/core/providers/credentials";

const port = Number(process.env.PORT ?? 8000);
const host = process.env.HOST ?? "127.0.0.1";
const workers = Number(process.env.WORKERS ?? 2);

if (cluster.isPrimary) {
  for (let i = 0; i < workers; i += 1) cluster.fork();
  let stopping = false;
  const stop = () => {
    stopping = true;
    for (const worker of Object.values(cluster.workers)) worker.kill("SIGTERM");
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  cluster.on("exit", (worker, code, signal) => {
    if (!stopping) {
      console.error(`worker ${worker.process.pid} died (${signal ?? code}); stopping`);
      stop();
      process.exitCode = 1;
    }
  });
} else {
  startWorker();
}

/** True when the two strings are equal; the time taken does not depend on where they differ. */
function sameString(given, expected) {
  if (typeof given !== "string") return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function makeConfig() {
  const secret = process.env.AUTH_SECRET;
  if (!secret) throw new Error("AUTH_SECRET is not set");
  const user = JSON.parse(process.env.BENCH_USER ?? "null");
  if (!user?.id || !user.username || !user.password) {
    throw new Error('BENCH_USER must be JSON {"id", "name", "email", "username", "password"}');
  }
  return {
    secret,
    basePath: "/auth",
    trustHost: true,
    providers: [
      Credentials({
        id: "credentials",
        name: "Credentials",
        credentials: {
          username: { label: "Username" },
          password: { label: "Password", type: "password" },
        },
        // The same work as benchmarks/http/auth.py:authorize on the webauth side.
        authorize(credentials) {
          const nameOk = sameString(credentials.username, user.username);
          const passwordOk = sameString(credentials.password, user.password);
          if (!(nameOk && passwordOk)) return null;
          return { id: user.id, name: user.name, email: user.email };
        },
      }),
    ],
  };
}

/** A WHATWG Request with the method, URL, headers and (for POST) body of *req*. */
async function toRequest(req) {
  const headers = new Headers();
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i], raw[i + 1]);
  const init = { method: req.method, headers };
  if (req.method !== "GET" && req.method !== "HEAD") {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    init.body = Buffer.concat(chunks);
  }
  // trustHost: the origin comes from the Host header, as Auth.js does with it.
  return new Request(`http://${req.headers.host ?? `${host}:${port}`}${req.url}`, init);
}

/** Writes *response* to *res*: status, all headers (Set-Cookie kept separate), body. */
async function send(response, res) {
  res.statusCode = response.status;
  for (const [name, value] of response.headers) {
    if (name !== "set-cookie") res.setHeader(name, value);
  }
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) res.setHeader("set-cookie", cookies);
  const body = response.body === null ? null : Buffer.from(await response.arrayBuffer());
  res.end(body);
}

function startWorker() {
  const config = makeConfig();
  const server = http.createServer(async (req, res) => {
    try {
      await send(await Auth(await toRequest(req), config), res);
    } catch (error) {
      console.error(error);
      if (!res.headersSent) res.statusCode = 500;
      res.end();
    }
  });
  server.listen(port, host);
  process.on("SIGTERM", () => {
    server.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 2000).unref();
  });
}
