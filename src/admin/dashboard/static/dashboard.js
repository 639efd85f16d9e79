// RocketBun dashboard: the behaviour of the server-rendered pages. No framework, no build step:
// this file is served as it is (embedded in the binary). Every change goes through the admin API's
// own endpoints with the token as an Authorization header (read from the login cookie): the
// server accepts the cookie for reads only, so no other site can make a browser change anything.
"use strict";
(function () {
  var COOKIE = "rocketbun_admin_token";

  function token() {
    var parts = document.cookie ? document.cookie.split("; ") : [];
    for (var i = 0; i < parts.length; i++) {
      var eq = parts[i].indexOf("=");
      if (parts[i].slice(0, eq) === COOKIE) return decodeURIComponent(parts[i].slice(eq + 1));
    }
    return "";
  }

  function setToken(t) {
    var secure = location.protocol === "https:" ? "; Secure" : "";
    document.cookie = t
      ? COOKIE + "=" + encodeURIComponent(t) + "; Path=/; SameSite=Strict" + secure
      : COOKIE + "=; Path=/; SameSite=Strict; Max-Age=0" + secure;
  }

  function showError(message) {
    var el = document.getElementById("error");
    if (!el) return;
    el.textContent = message;
    el.hidden = !message;
  }

  // Calls the admin API; resolves with the JSON answer, rejects with the API's error message.
  function api(method, path, body, tokenOverride) {
    var headers = { Accept: "application/json" };
    var t = tokenOverride !== undefined ? tokenOverride : token();
    if (t) headers.Authorization = "Bearer " + t;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    return fetch(path, {
      method: method,
      headers: headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
    }).then(function (r) {
      return r.text().then(function (text) {
        var data = null;
        try {
          data = text ? JSON.parse(text) : null;
        } catch (e) {
          data = null;
        }
        if (!r.ok) throw new Error((data && data.error && data.error.message) || "HTTP " + r.status);
        return data;
      });
    });
  }

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") e.textContent = attrs[k];
      else e.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) {
      if (c !== null && c !== undefined) e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return e;
  }

  function table(head, rows) {
    return el("table", {}, [
      el("thead", {}, [
        el(
          "tr",
          {},
          head.map(function (h) {
            return el("th", { text: h });
          }),
        ),
      ]),
      el(
        "tbody",
        {},
        rows.map(function (r) {
          return el(
            "tr",
            {},
            r.map(function (c) {
              return el("td", {}, [typeof c === "string" ? c : c]);
            }),
          );
        }),
      ),
    ]);
  }

  function result(node, ok, message) {
    node.className = "result " + (ok ? "ok" : "bad");
    node.textContent = message;
  }

  function time(ms) {
    return ms > 0 ? new Date(ms).toISOString().slice(0, 19).replace("T", " ") + " UTC" : "—";
  }

  // One stored message: where it is, its body (text when it is UTF-8, else base64) and its properties.
  function messageView(m) {
    var props = Object.keys(m.properties || {})
      .sort()
      .map(function (k) {
        return [k, String(m.properties[k])];
      });
    var body = m.body && m.body.text !== undefined ? m.body.text : (m.body && m.body.base64) || "";
    return el("section", { class: "message", "data-msgid": m.msgId }, [
      el("h3", { text: m.msgId }),
      table(
        ["topic", "queue", "queue offset", "keys", "tags", "stored", "born at", "size", "reconsumed"],
        [
          [
            m.topic,
            String(m.queueId),
            String(m.queueOffset),
            (m.keys || []).join(" "),
            m.tags || "",
            time(m.storeTimestamp),
            m.bornHost || "",
            (m.body ? m.body.sizeBytes : 0) + " B",
            String(m.reconsumeTimes),
          ],
        ],
      ),
      el("h4", { text: m.body && m.body.text !== undefined ? "Body" : "Body (base64: not UTF-8 text)" }),
      el("pre", { class: "body", text: body }),
      el("h4", { text: "Properties" }),
      table(["name", "value"], props),
    ]);
  }

  var pages = {};

  pages.login = function () {
    var params = new URLSearchParams(location.search);
    if (params.get("logout") === "1") setToken("");
    var form = document.getElementById("login");
    if (!form) return;
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var t = form.elements.token.value.trim();
      var out = form.querySelector(".result");
      // The answer is read to its end before leaving the page (a navigation would cut it off).
      fetch("/ui/session", { headers: { Authorization: "Bearer " + t } }).then(function (r) {
        return r.text().then(function () {
          if (!r.ok) return result(out, false, "That is not the admin token.");
          setToken(t);
          var next = params.get("next") || "/ui/";
          location.assign(next.charAt(0) === "/" && next.charAt(1) !== "/" ? next : "/ui/");
        });
      });
    });
  };

  pages.group = function () {
    var form = document.getElementById("reset-offset");
    if (!form) return;
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var f = form.elements;
      var body = { topic: f.topic.value };
      var mode = form.querySelector("input[name=mode]:checked").value;
      if (mode === "end") body.timestamp = -1;
      else if (mode === "start") body.offset = 0;
      else if (mode === "time") body.timestamp = Date.parse(f.time.value);
      else body.offset = Number(f.offset.value);
      var out = document.getElementById("reset-result");
      if (body.timestamp !== undefined && !(body.timestamp >= -1)) return result(out, false, "Pick a time.");
      api("POST", "/groups/" + encodeURIComponent(form.dataset.group) + "/reset-offset", body).then(
        function () {
          location.reload();
        },
        function (e) {
          result(out, false, e.message);
        },
      );
    });
  };

  function lookupPath(by, f) {
    var topic = f.topic.value.trim();
    if (by === "id") return "/messages/" + encodeURIComponent(f.msgId.value.trim()) + (topic ? "?topic=" + encodeURIComponent(topic) : "");
    var q = new URLSearchParams({ topic: topic });
    if (by === "key") q.set("key", f.key.value.trim());
    else {
      q.set("queueId", f.queueId.value);
      q.set("offset", f.offset.value);
    }
    return "/messages?" + q.toString();
  }

  pages.messages = function () {
    var results = document.getElementById("results");
    document.querySelectorAll("form.lookup").forEach(function (form) {
      form.addEventListener("submit", function (ev) {
        ev.preventDefault();
        showError("");
        results.textContent = "Looking up…";
        api("GET", lookupPath(form.dataset.by, form.elements)).then(
          function (data) {
            var list = data && data.messages ? data.messages : [data];
            results.textContent = "";
            results.appendChild(el("p", { class: "note", id: "found", text: list.length + (list.length === 1 ? " message" : " messages") }));
            list.forEach(function (m) {
              results.appendChild(messageView(m));
            });
          },
          function (e) {
            results.textContent = "";
            showError(e.message);
          },
        );
      });
    });
  };

  // A copy of a dead letter for POST /messages: body, tags, keys and the user's own properties.
  function resendBody(m, topic, reserved) {
    var props = {};
    Object.keys(m.properties || {}).forEach(function (k) {
      if (reserved.indexOf(k) < 0) props[k] = m.properties[k];
    });
    var b = { topic: topic, bodyBase64: m.body.base64, properties: props };
    if (m.tags) b.tags = m.tags;
    if (m.keys && m.keys.length) b.keys = m.keys;
    return b;
  }

  function dlqActions(m, d, reserved) {
    var out = el("span", { class: "result" });
    var targets = ["%RETRY%" + d.group];
    var original = m.properties && m.properties.RETRY_TOPIC;
    if (original && targets.indexOf(original) < 0) targets.push(original);
    var buttons = targets.map(function (topic, i) {
      var b = el("button", { type: "button", class: i === 0 ? "resend" : "resend secondary", text: "Resend to " + topic });
      b.addEventListener("click", function () {
        b.disabled = true;
        api("POST", "/messages", resendBody(m, topic, reserved)).then(
          function (r) {
            result(out, true, "Sent to " + topic + " as " + r.msgId);
          },
          function (e) {
            b.disabled = false;
            result(out, false, e.message);
          },
        );
      });
      return b;
    });
    return el("div", { class: "actions" }, buttons.concat([out]));
  }

  pages.dlq = function () {
    var box = document.getElementById("dlq-browser");
    if (!box) return;
    var d = box.dataset;
    var reserved = d.reserved.split(",");
    var more = document.getElementById("dlq-more");
    var next = 0;
    function load(offset, hops) {
      var q = new URLSearchParams({ topic: d.topic, queueId: "0", offset: String(offset), maxNum: "16" });
      api("GET", "/messages?" + q.toString()).then(
        function (r) {
          // An offset below what the store keeps answers nothing but where to start: go there once.
          if (r.messages.length === 0 && r.nextOffset > offset && hops < 2) return load(r.nextOffset, hops + 1);
          r.messages.forEach(function (m) {
            var v = messageView(m);
            v.appendChild(dlqActions(m, d, reserved));
            box.appendChild(v);
          });
          if (r.messages.length === 0 && offset === 0) box.appendChild(el("p", { class: "empty", text: "No dead letters are kept." }));
          next = r.nextOffset;
          more.hidden = !(r.maxOffset !== undefined && next < r.maxOffset);
        },
        function (e) {
          showError(e.message);
        },
      );
    }
    more.addEventListener("click", function () {
      load(next, 0);
    });
    load(0, 0);
  };

  function configValue(type, raw) {
    if (type === "number") return Number(raw);
    if (type === "boolean") return raw === "true";
    if (type === "list")
      return raw
        .split(",")
        .map(function (s) {
          return s.trim();
        })
        .filter(function (s) {
          return s !== "";
        });
    return raw;
  }

  pages.config = function () {
    document.querySelectorAll("form.config-edit").forEach(function (form) {
      form.addEventListener("submit", function (ev) {
        ev.preventDefault();
        var out = form.querySelector(".result");
        var patch = {};
        patch[form.dataset.key] = configValue(form.dataset.type, form.elements.value.value);
        api("PATCH", "/config", patch).then(
          function () {
            result(out, true, "applied");
          },
          function (e) {
            result(out, false, e.message);
          },
        );
      });
    });
  };

  var PALETTE = ["#c2410c", "#1d4ed8", "#15803d", "#7c3aed", "#b91c1c", "#0e7490", "#a16207", "#be185d", "#4d7c0f", "#475569"];

  function drawCharts(history, charts) {
    document.querySelectorAll(".chart").forEach(function (box) {
      var key = box.dataset.series;
      var series = history[key] || {};
      var names = Object.keys(series);
      var data = [history.times].concat(
        names.map(function (n) {
          return series[n];
        }),
      );
      var signature = names.join("\u0000");
      var old = charts[key];
      if (old && old.signature === signature) return old.plot.setData(data);
      if (old) old.plot.destroy();
      box.textContent = "";
      if (history.times.length < 2) box.appendChild(el("p", { class: "empty", text: "Collecting samples: one every 10 s." }));
      if (history.times.length === 0) return;
      var opts = {
        width: Math.max(300, box.clientWidth - 16),
        height: 220,
        series: [{}].concat(
          names.map(function (n, i) {
            return { label: n, stroke: PALETTE[i % PALETTE.length], width: 2 };
          }),
        ),
        axes: [{}, { size: 60 }],
        // Always the last hour up to the newest point, whatever has been sampled so far.
        scales: {
          x: {
            time: true,
            range: function (u, min, max) {
              return [max - 3600, max];
            },
          },
          y: {
            range: function (u, min, max) {
              return [0, Math.max(1, max)];
            },
          },
        },
      };
      charts[key] = { signature: signature, plot: new window.uPlot(opts, data, box) };
    });
  }

  pages.charts = function () {
    var charts = {};
    function refresh() {
      api("GET", "/stats/history").then(
        function (h) {
          drawCharts(h, charts);
        },
        function (e) {
          showError(e.message);
        },
      );
    }
    refresh();
    setInterval(refresh, 10000);
  };

  var page = document.body.dataset.page;
  if (page && pages[page]) pages[page]();
})();
