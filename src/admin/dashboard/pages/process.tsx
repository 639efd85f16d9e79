/**
 * Transactions (the half and op queues and the check-back counters), the configuration in force
 * (the keys that can change live get an input; dashboard.js sends them with PATCH /config), the
 * charts of the last hour (drawn by dashboard.js with uPlot from GET /stats/history) and the login
 * page.
 */
import type { FC } from "hono/jsx";
import type { TransactionStats } from "../../../broker/index.ts";
import { num, Table } from "../layout.tsx";

export const TransactionsPage: FC<{ t: TransactionStats }> = ({ t }) => (
  <>
    <h2>Half messages</h2>
    <Table
      id="transactions"
      head={["half queue min", "half queue max", "checked up to", "pending (at most)", "op queue max", "op checked up to"]}
      rows={[
        [
          num(t.halfMinOffset),
          num(t.halfMaxOffset),
          num(t.halfCheckOffset),
          num(Math.max(0, t.halfMaxOffset - t.halfCheckOffset)),
          num(t.opMaxOffset),
          num(t.opCheckOffset),
        ],
      ]}
      empty=""
    />
    <h2>Outcomes since start</h2>
    <Table
      head={["committed", "rolled back", "check-backs sent", "discarded (too many checks)", "resolved, remembered"]}
      rows={[[num(t.committed), num(t.rolledBack), num(t.checksSent), num(t.discarded), num(t.resolvedKnown)]]}
      empty=""
    />
  </>
);

export interface ConfigEntry {
  key: string;
  value: unknown;
  live: boolean;
}

function shown(v: unknown): string {
  return typeof v === "string" ? v : (JSON.stringify(v) ?? "");
}

const typeOf = (v: unknown) => (Array.isArray(v) ? "list" : typeof v);

const LiveInput: FC<{ e: ConfigEntry }> = ({ e }) =>
  typeof e.value === "boolean" ? (
    <select name="value">
      <option value="true" selected={e.value}>
        true
      </option>
      <option value="false" selected={!e.value}>
        false
      </option>
    </select>
  ) : (
    <input name="value" value={Array.isArray(e.value) ? e.value.join(",") : shown(e.value)} size={30} />
  );

export const ConfigPage: FC<{ file: string | null; entries: ConfigEntry[] }> = ({ file, entries }) => (
  <>
    <p class="note">
      {file ? `Loaded from ${file}. ` : "No config file: defaults and flags. "}
      Keys marked live change at once (PATCH /config, as UPDATE_BROKER_CONFIG does); the others need a change of the file and a restart.
    </p>
    <Table
      id="config"
      head={["key", "value", "live"]}
      rows={entries.map((e) => [
        <code>{e.key}</code>,
        e.live ? (
          <form class="config-edit" data-key={e.key} data-type={typeOf(e.value)}>
            <LiveInput e={e} /> <button type="submit">Apply</button> <span class="result"></span>
          </form>
        ) : (
          shown(e.value)
        ),
        e.live ? "live" : "",
      ])}
      empty="No configuration."
    />
  </>
);

export const ChartsPage: FC = () => (
  <>
    <p class="note">
      Sampled every 10 s and kept in memory for the last hour (a restart starts over). Rates are messages per second; lag is messages behind the
      queues' ends.
    </p>
    <h2>Messages in per second, by topic</h2>
    <div class="chart" data-series="inTps"></div>
    <h2>Messages out per second, by topic</h2>
    <div class="chart" data-series="outTps"></div>
    <h2>Consumer lag, by group</h2>
    <div class="chart" data-series="lag"></div>
  </>
);

export const LoginPage: FC<{ tokenConfigured: boolean }> = ({ tokenConfigured }) =>
  tokenConfigured ? (
    <form id="login" class="action">
      <p>This admin port needs its token (admin.token or admin.tokenFile).</p>
      <label>
        Admin token <input type="password" name="token" autocomplete="current-password" required size={40} />
      </label>
      <button type="submit">Log in</button>
      <span class="result"></span>
    </form>
  ) : (
    <p class="note">
      No admin token is configured: pages are open, and changes (offset resets, resends, config edits) are refused until one is.{" "}
      <a href="/ui/">Go to the dashboard</a>
    </p>
  );
