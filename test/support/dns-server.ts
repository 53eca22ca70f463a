/**
 * A DNS server of the test's own on UDP 127.0.0.1 (packets encoded with dns-packet): it answers
 * A queries for the names it is given, answers other questions with no record, and never answers
 * the names it is told to black-hole, as a hostile or broken authoritative server would not.
 */
import { createSocket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import dnsPacket from 'dns-packet';

/** A running DNS server. */
export interface TestDnsServer {
  /** `127.0.0.1:<port>`, for DNS_SERVERS. */
  address: string;
  /** Every question name received, in order (black-holed ones included). */
  queries: string[];
  close(): Promise<void>;
}

/**
 * Starts the server.
 *
 * @param records name to IPv4 address, answered with a TTL of 60 s
 * @param blackHoled names whose queries get no answer at all
 */
export async function startTestDnsServer(
  records: Record<string, string>,
  blackHoled: string[],
): Promise<TestDnsServer> {
  const socket = createSocket('udp4');
  const queries: string[] = [];
  socket.on('message', (message, remote) => {
    const query = dnsPacket.decode(message);
    const question = query.questions?.[0];
    if (question === undefined) return;
    queries.push(question.name);
    if (blackHoled.includes(question.name)) return;
    const address = records[question.name];
    const answers =
      question.type === 'A' && address !== undefined
        ? [{ type: 'A' as const, name: question.name, ttl: 60, data: address }]
        : [];
    const response = dnsPacket.encode({
      type: 'response',
      id: query.id,
      flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE,
      questions: query.questions,
      answers,
    });
    socket.send(response, remote.port, remote.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    queries,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
