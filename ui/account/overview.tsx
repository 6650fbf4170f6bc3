import type { Me } from './api.js';
import { credits, when } from './format.js';

export function OverviewSection({ me }: { me: Me }) {
  const m = me.membership;
  return (
    <section id="overview" class="card" aria-labelledby="overview-title">
      <h2 id="overview-title">Overview</h2>
      <dl class="facts">
        <dt>Account</dt>
        <dd>
          {me.name}
          {me.email ? ` (${me.email})` : ''}
        </dd>
        <dt>Membership</dt>
        <dd data-testid="membership">
          {m?.active ? (
            <>Active until {when(m.periodEnd)}</>
          ) : (
            <>
              No membership. API keys cannot parse or transcribe without one; here you can still parse at 720p or 480p.
              {m ? ` (Ended ${when(m.periodEnd)}.)` : ''}
            </>
          )}
        </dd>
        <dt>Available</dt>
        <dd data-testid="available">{credits(me.credits.available)}</dd>
        <dt>Held</dt>
        <dd data-testid="held">{credits(me.credits.held)} (for tasks still running)</dd>
      </dl>
    </section>
  );
}
