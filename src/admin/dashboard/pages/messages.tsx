/**
 * Message lookup and dead letters. Both pages are forms and empty result areas: dashboard.js asks
 * the admin API (GET /messages/{msgId}, GET /messages?topic=&key=, GET /messages?topic=&queueId=&offset=)
 * and shows what it answers, body and properties; a dead letter is sent again with POST /messages.
 */
import type { FC } from "hono/jsx";
import { num, Table } from "../layout.tsx";

export const MessagesPage: FC<{ topics: string[] }> = ({ topics }) => (
  <>
    <datalist id="topic-names">
      {topics.map((t) => (
        <option value={t} />
      ))}
    </datalist>
    <div class="forms">
      <form class="lookup action" data-by="id">
        <h2>By message id</h2>
        <label>
          Message id <input name="msgId" required size={40} />
        </label>
        <label>
          Topic (for a client unique key) <input name="topic" list="topic-names" />
        </label>
        <button type="submit">Look up</button>
      </form>
      <form class="lookup action" data-by="key">
        <h2>By key</h2>
        <label>
          Topic <input name="topic" list="topic-names" required />
        </label>
        <label>
          Key <input name="key" required />
        </label>
        <button type="submit">Look up</button>
      </form>
      <form class="lookup action" data-by="offset">
        <h2>By queue offset</h2>
        <label>
          Topic <input name="topic" list="topic-names" required />
        </label>
        <label>
          Queue <input name="queueId" type="number" min="0" value="0" required />
        </label>
        <label>
          Offset <input name="offset" type="number" min="0" value="0" required />
        </label>
        <button type="submit">Look up</button>
      </form>
    </div>
    <div id="results"></div>
  </>
);

export interface DlqTopic {
  group: string;
  topic: string;
  messages: number;
}

export const DlqPage: FC<{ dlq: DlqTopic[]; reserved: string[]; selected?: DlqTopic }> = ({ dlq, reserved, selected }) => (
  <>
    <Table
      id="dlq-topics"
      head={["consumer group", "dead-letter topic", "messages"]}
      rows={dlq.map((d) => [<a href={`/ui/dlq?group=${encodeURIComponent(d.group)}`}>{d.group}</a>, d.topic, num(d.messages)])}
      empty="No consumer group has dead letters."
    />
    {selected ? (
      <>
        <h2>Dead letters of {selected.group}</h2>
        <p class="note">
          Resend puts a copy (body, tags, keys, user properties) on the group's retry topic, so this group alone consumes it again, or on the
          message's original topic, so every group subscribed to it does.
        </p>
        <div id="dlq-browser" data-topic={selected.topic} data-group={selected.group} data-reserved={reserved.join(",")}></div>
        <p>
          <button type="button" id="dlq-more" hidden>
            Next page…
          </button>
        </p>
      </>
    ) : null}
  </>
);
