import { parsePocketsphinx } from '../../../src/providers/transcription/local.adapter.js';

/** Output as pocketsphinx_continuous -time yes prints it (two utterances). */
const OUTPUT = `hello world
<s> 0.080 0.210 0.999300
hello 0.220 0.560 0.730712
world(2) 0.570 1.190 0.999700
<sil> 1.200 1.300 0.970830
</s> 1.300 1.310 1.000000
the quick brown fox
<s> 2.000 2.050 1.000000
the 2.050 2.200 0.900000
[NOISE] 2.200 2.300 1.000000
quick 2.300 2.640 0.800000
brown 2.650 2.900 0.700000
fox 2.910 3.3333 0.600000
`;

describe('parsePocketsphinx', () => {
  it('turns each utterance into a timed segment, without markers or pronunciation variants', () => {
    expect(parsePocketsphinx(OUTPUT)).toEqual([
      {
        index: 1,
        start: 0.22,
        end: 1.19,
        text: 'hello world',
        speaker: null,
        words: [
          { start: 0.22, end: 0.56, text: 'hello' },
          { start: 0.57, end: 1.19, text: 'world' },
        ],
      },
      {
        index: 2,
        start: 2.05,
        end: 3.333,
        text: 'the quick brown fox',
        speaker: null,
        words: [
          { start: 2.05, end: 2.2, text: 'the' },
          { start: 2.3, end: 2.64, text: 'quick' },
          { start: 2.65, end: 2.9, text: 'brown' },
          { start: 2.91, end: 3.333, text: 'fox' },
        ],
      },
    ]);
  });

  it('gives no segments for silence', () => {
    expect(parsePocketsphinx('\n<s> 0.000 0.100 1.000\n</s> 0.100 0.200 1.000\n')).toEqual([]);
  });
});
