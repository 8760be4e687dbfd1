/**
 * An SDK client stand-in for unit tests of command inputs: it records each command's input and
 * answers `answer`. Typed `never` so it stands in for any client (`Pick<SQSClient, 'send'>`, an
 * SNS or EventBridge client); never proof that a request works, only of what is sent.
 */
export function capturingClient(answer: unknown = {}) {
  const inputs: Record<string, unknown>[] = [];
  return {
    inputs,
    client: {
      send: async (command: { input: Record<string, unknown> }) => {
        inputs.push(command.input);
        return answer;
      },
    } as never,
  };
}
