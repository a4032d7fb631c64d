// A local webhook receiver: records every request and answers what the test says.
export interface Received {
  headers: Headers;
  raw: string;
  body: any;
}

export function startReceiver() {
  const received: Received[] = [];
  let respond: (req: Received) => Response | Promise<Response> = () => new Response("ok");
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const raw = await req.text();
      let body: unknown = null;
      try {
        body = JSON.parse(raw);
      } catch {
        body = null;
      }
      const entry = { headers: req.headers, raw, body };
      received.push(entry);
      return respond(entry);
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/hook`,
    received,
    /** How the receiver answers from now on. */
    answer(fn: (req: Received) => Response | Promise<Response>) {
      respond = fn;
    },
    ofType: (type: string) => received.filter((r) => r.body?.type === type),
    stop: () => server.stop(true),
  };
}

export type Receiver = ReturnType<typeof startReceiver>;
