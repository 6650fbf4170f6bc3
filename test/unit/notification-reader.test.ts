import fc from 'fast-check';
import { NotificationReader } from '../../src/db/embedded.js';

/** One backend message: a type byte, its length (itself included), the body. */
const message = (type: string, body: Buffer) => {
  const header = Buffer.alloc(5);
  header.write(type, 0, 'latin1');
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
};
const notification = (channel: string, payload: string) => {
  const pid = Buffer.alloc(4);
  pid.writeInt32BE(4242);
  return message('A', Buffer.concat([pid, Buffer.from(`${channel}\0${payload}\0`, 'utf8')]));
};

const other = fc.record({ type: fc.constantFrom('D', 'C', 'Z', 'T', 'N', '1', '2'), body: fc.uint8Array({ maxLength: 300 }) });
const note = fc.record({ channel: fc.constantFrom('mediagate_job', 'mediagate_auth'), payload: fc.json({ maxDepth: 2 }) });

describe('NotificationReader (the embedded database’s notifications, read from its raw replies)', () => {
  it('finds every notification, in order, however the replies are cut into chunks', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(other, note), { maxLength: 30 }), fc.array(fc.nat(), { maxLength: 20 }), (messages, cuts) => {
        const stream = Buffer.concat(
          messages.map((m) => ('channel' in m ? notification(m.channel, m.payload) : message(m.type, Buffer.from(m.body)))),
        );
        const seen: [string, string][] = [];
        const reader = new NotificationReader((channel, payload) => seen.push([channel, payload]));
        const points = [...new Set(cuts.map((c) => (stream.length ? c % stream.length : 0)))].sort((a, b) => a - b);
        let from = 0;
        for (const at of [...points, stream.length]) {
          reader.push(new Uint8Array(stream.subarray(from, at)));
          from = at;
        }
        expect(seen).toEqual(messages.filter((m) => 'channel' in m).map((m) => [m.channel, m.payload]));
      }),
      { seed: 7, numRuns: 500 },
    );
  });
});
