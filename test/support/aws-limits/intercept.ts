/**
 * What the conformance layers share: a client whose `send` is intercepted and every other
 * property passes through.
 */

/** An SDK client's `send`, as the layers call it (promise form). */
export type Send = (command: unknown, ...rest: unknown[]) => Promise<unknown>;

/**
 * `client` with its `send` replaced by `intercept(forward)`, where `forward` sends to the wrapped
 * client; every other property of the client is the client's own.
 */
export function interceptSend<Client extends { send(...args: never[]): unknown }>(
  client: Client,
  intercept: (forward: Send) => Send,
): Client {
  const forward: Send = (command, ...rest) => (client.send as unknown as Send).call(client, command, ...rest);
  const send = intercept(forward);
  return new Proxy(client, {
    get: (target, property) => (property === 'send' ? send : Reflect.get(target, property)),
  });
}
