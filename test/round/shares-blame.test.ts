// Blaming a decrypting site whose share bundle does not open (threshold keys): more than half of
// the round's voters must name it, so one hostile decrypter cannot get every honest voter struck
// and a few hostile voters cannot frame an honest decrypter.
import { describe, expect, it } from 'vitest';
import { blamedDecrypter, sharesInvalidReason } from '../../src/round/index.ts';

const no = (site: string) => ({ yes: false, reason: sharesInvalidReason(site, 'the seal does not open') });
const yes = { yes: true, reason: '' };

describe('blamedDecrypter', () => {
  it('names the site every honest voter blames, with those voters', () => {
    const votes = new Map([
      ['site-1', no('site-3')],
      ['site-2', no('site-3')],
      ['site-3', yes],
      ['site-4', no('site-3')],
    ]);
    expect(blamedDecrypter(['site-1', 'site-2', 'site-3', 'site-4'], votes)).toEqual({
      site: 'site-3',
      voters: ['site-1', 'site-2', 'site-4'],
    });
  });

  it('counts no abstention, as a blamer or among the voters: the coordinator and the audit agree', () => {
    const abstain = (site: string) => ({ ...no(site), abstain: true });
    const votes = new Map([
      ['site-1', no('site-3')],
      ['site-2', no('site-3')],
      ['site-3', yes],
      ['site-4', abstain('site-1')],
      ['site-5', abstain('site-1')],
    ]);
    const all = ['site-1', 'site-2', 'site-3', 'site-4', 'site-5'];
    // The coordinator passes its YES and NO voters, the audit every logged voter: the same answer.
    expect(blamedDecrypter(['site-1', 'site-2', 'site-3'], votes)?.site).toBe('site-3');
    expect(blamedDecrypter(all, votes)?.site).toBe('site-3');
    // Abstainers naming a site in their reason frame no one.
    expect(
      blamedDecrypter(
        all,
        new Map([...votes, ['site-1', abstain('site-2')], ['site-2', abstain('site-2')], ['site-3', yes]]),
      ),
    ).toBeUndefined();
  });

  it('names nobody when half or fewer blame one site, when a voter blames itself, or for other NO reasons', () => {
    const voters = ['site-1', 'site-2', 'site-3', 'site-4'];
    expect(
      blamedDecrypter(
        voters,
        new Map([
          ['site-1', no('site-2')],
          ['site-3', no('site-2')],
          ['site-2', yes],
          ['site-4', yes],
        ]),
      ),
    ).toBeUndefined();
    expect(blamedDecrypter(['site-1'], new Map([['site-1', no('site-1')]]))).toBeUndefined();
    expect(
      blamedDecrypter(
        voters,
        new Map(voters.map((v) => [v, { yes: false, reason: 'BLOCK_MAC_MISMATCH: the MAC does not hold' }])),
      ),
    ).toBeUndefined();
    // Votes of members who are not voters do not count.
    expect(
      blamedDecrypter(
        ['site-1', 'site-2', 'site-3'],
        new Map([
          ['site-1', no('site-3')],
          ['site-9', no('site-3')],
          ['site-8', no('site-3')],
        ]),
      ),
    ).toBeUndefined();
  });
});
