/*
 * webauth passkeys: sign in, autofill and registration with the browser's WebAuthn API.
 *
 * No build step, no CDN, no dependency. It talks to webauth's routes as Auth.js's
 * client does: GET <base>/webauthn-options/<provider>?action=..., then POST
 * <base>/callback/<provider> with action, data (the credential as JSON) and
 * callbackUrl, sending X-Auth-Return-Redirect so that the answer is JSON.
 *
 * API (window.webauth.passkeys), every call resolves to {ok, url} or {ok: false, error}:
 *   signIn({provider, baseUrl, callbackUrl, email, element, redirect})  the button
 *   register({... same})      a new passkey (a signed-in user, or a new account with email)
 *   autofill({... same})      conditional mediation on an autocomplete="username webauthn" field
 *   abort()                   end the ceremony under way (and stop autofill)
 * One AbortController is shared by all of them, so the button and autofill never fight:
 * starting one ends the other, and autofill resumes after a button ceremony fails.
 *
 * Markup it binds by itself (what {% webauth_passkey_signin %}, {% webauth_passkey_register %}
 * and the built-in sign-in page render): a container [data-webauth-passkeys] with
 * data-provider, data-base-url, data-callback-url (and data-autofill, data-discoverable,
 * data-message-*), holding button#webauth-passkey-signin, button#webauth-passkey-register,
 * an input with autocomplete="username webauthn", and a role="alert" element
 * [data-webauth-passkey-error] for errors. The input may be elsewhere on the page:
 * data-identifier names it (the built-in sign-in page's one identifier field). A
 * container with data-webauth-reveal is hidden until this script shows it, in a
 * browser that can use passkeys.
 */
(function () {
  "use strict";

  if (window.webauth && window.webauth.passkeys) {
    return; // loaded twice (two tags on one page): the first copy serves both
  }

  var MESSAGES = {
    failed: "The passkey could not be verified. Try again, or use another way to sign in.",
    cancelled: "The passkey request was cancelled or timed out.",
    unsupported: "This browser cannot use passkeys.",
    exists: "This passkey is already registered.",
    email: "Enter your email address to create a passkey.",
    rateLimited: "Too many attempts. Please wait a few minutes before you try again.",
    server: "Something went wrong. Please try again.",
    noPasskey:
      "No passkey was used: the request was cancelled, or this device has no passkey for " +
      "this site yet. Sign in another way."
  };

  var controller = null; // the AbortController of the ceremony under way
  // The browser's WebAuthn request under way, as a promise that settles (never
  // rejects) once the browser has let go of it. Browsers refuse a new request
  // while another is still pending ("A request is already pending", a
  // NotAllowedError, which read as "cancelled" to a person who pressed a button
  // while the page's autofill request was out): after aborting one, the next
  // waits for it to settle.
  var inFlight = Promise.resolve();
  var autofillOptions = null; // what autofill was started with, to resume it
  var autofillRestarts = 0;

  // -- base64url (only for browsers without the JSON helpers) -----------------------
  function toBuffer(text) {
    var b64 = String(text).replace(/-/g, "+").replace(/_/g, "/");
    while (b64.length % 4) {
      b64 += "=";
    }
    var bin = atob(b64);
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) {
      bytes[i] = bin.charCodeAt(i);
    }
    return bytes.buffer;
  }

  function toBase64url(buffer) {
    var bytes = new Uint8Array(buffer);
    var bin = "";
    for (var i = 0; i < bytes.length; i++) {
      bin += String.fromCharCode(bytes[i]);
    }
    return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function descriptor(d) {
    return { type: d.type, id: toBuffer(d.id), transports: d.transports };
  }

  function creationOptions(json) {
    if (window.PublicKeyCredential && PublicKeyCredential.parseCreationOptionsFromJSON) {
      return PublicKeyCredential.parseCreationOptionsFromJSON(json);
    }
    var options = Object.assign({}, json);
    options.challenge = toBuffer(json.challenge);
    options.user = Object.assign({}, json.user, { id: toBuffer(json.user.id) });
    options.excludeCredentials = (json.excludeCredentials || []).map(descriptor);
    return options;
  }

  function requestOptions(json) {
    if (window.PublicKeyCredential && PublicKeyCredential.parseRequestOptionsFromJSON) {
      return PublicKeyCredential.parseRequestOptionsFromJSON(json);
    }
    var options = Object.assign({}, json);
    options.challenge = toBuffer(json.challenge);
    options.allowCredentials = (json.allowCredentials || []).map(descriptor);
    return options;
  }

  function credentialJSON(credential) {
    if (typeof credential.toJSON === "function") {
      try {
        return credential.toJSON();
      } catch (e) {
        // some password-manager extensions return objects whose toJSON throws
      }
    }
    var r = credential.response;
    var json = {
      id: credential.id,
      rawId: toBase64url(credential.rawId),
      type: credential.type,
      authenticatorAttachment: credential.authenticatorAttachment || undefined,
      clientExtensionResults: credential.getClientExtensionResults
        ? credential.getClientExtensionResults()
        : {},
      response: { clientDataJSON: toBase64url(r.clientDataJSON) }
    };
    if (r.attestationObject) {
      json.response.attestationObject = toBase64url(r.attestationObject);
      json.response.transports = r.getTransports ? r.getTransports() : [];
    } else {
      json.response.authenticatorData = toBase64url(r.authenticatorData);
      json.response.signature = toBase64url(r.signature);
      json.response.userHandle = r.userHandle ? toBase64url(r.userHandle) : undefined;
    }
    return json;
  }

  // -- settings, messages -------------------------------------------------------------
  function settings(opts) {
    opts = opts || {};
    var el = opts.element || document.querySelector("[data-webauth-passkeys]");
    var data = (el && el.dataset) || {};
    return {
      element: el,
      provider: opts.provider || data.provider || "passkey",
      baseUrl: String(opts.baseUrl || data.baseUrl || "/auth").replace(/\/+$/, ""),
      callbackUrl: opts.callbackUrl || data.callbackUrl || window.location.href,
      email: opts.email,
      redirect: opts.redirect !== false,
      onError: opts.onError
    };
  }

  function message(s, key) {
    var data = (s.element && s.element.dataset) || {};
    var name = "message" + key.charAt(0).toUpperCase() + key.slice(1);
    return data[name] || MESSAGES[key] || MESSAGES.failed;
  }

  function alertElement(s) {
    var el = s.element && s.element.querySelector("[data-webauth-passkey-error]");
    return el || document.getElementById("webauth-passkey-error");
  }

  function clearError(s) {
    var el = alertElement(s);
    if (el) {
      el.textContent = "";
      el.hidden = true;
    }
  }

  function showError(s, key) {
    var el = alertElement(s);
    if (el) {
      el.textContent = message(s, key);
      el.hidden = false;
    }
    if (typeof s.onError === "function") {
      s.onError(key);
    }
  }

  function PasskeyError(code, body) {
    this.name = "PasskeyError";
    this.code = code;
    this.body = body || {};
  }

  function supported() {
    return Boolean(window.PublicKeyCredential && navigator.credentials);
  }

  function newSignal() {
    if (controller) {
      controller.abort();
    }
    controller = new AbortController();
    return controller.signal;
  }

  // Start a navigator.credentials call once the one before it has settled.
  function browserRequest(start) {
    var request = inFlight.then(start);
    inFlight = request.then(settled, settled);
    return request;
  }

  // -- the two requests ---------------------------------------------------------------
  function readJSON(response) {
    return response.json().catch(function () {
      return {};
    });
  }

  // One options request at a time. The first answer sets the challenge cookie
  // that binds this browser's ceremonies; a request sent before it lands would
  // carry no cookie, get a binding of its own, and whichever answer landed last
  // would leave the other ceremony's challenge bound to "another browser" (a
  // person pressing the button while the autofill request is still out).
  var optionsQueue = Promise.resolve();

  function fetchOptions(s, action, email) {
    var ask = function () {
      return askForOptions(s, action, email);
    };
    var answer = optionsQueue.then(ask, ask);
    optionsQueue = answer.then(settled, settled);
    return answer;
  }

  function settled() {}

  function askForOptions(s, action, email) {
    var query = new URLSearchParams();
    if (action) {
      query.set("action", action);
    }
    if (email) {
      query.set("email", email);
    }
    var url = s.baseUrl + "/webauthn-options/" + encodeURIComponent(s.provider) + "?" + query;
    return fetch(url, {
      credentials: "same-origin",
      headers: { Accept: "application/json" }
    }).then(function (response) {
      return readJSON(response).then(function (body) {
        if (!response.ok || !body.options) {
          var code = response.status === 429 ? "rateLimited" : "server";
          throw new PasskeyError(code, body);
        }
        return body;
      });
    });
  }

  function post(s, action, credential) {
    var body = new URLSearchParams();
    body.set("action", action);
    body.set("data", JSON.stringify(credentialJSON(credential)));
    body.set("callbackUrl", s.callbackUrl);
    return fetch(s.baseUrl + "/callback/" + encodeURIComponent(s.provider), {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Auth-Return-Redirect": "1",
        Accept: "application/json"
      },
      body: body
    }).then(function (response) {
      return readJSON(response).then(function (data) {
        if (response.ok && data.url) {
          return data;
        }
        var unknown = data.unknownCredential;
        if (unknown && PublicKeyCredential.signalUnknownCredential) {
          // Tell the passkey provider to forget a passkey this site no longer knows.
          PublicKeyCredential.signalUnknownCredential(unknown).catch(function () {});
        }
        throw new PasskeyError(response.status === 429 ? "rateLimited" : "failed", data);
      });
    });
  }

  function succeeded(s, data) {
    if (s.redirect) {
      window.location.assign(data.url);
    }
    return { ok: true, url: data.url };
  }

  function failed(s, error, quiet, signingIn) {
    var code;
    if (error instanceof PasskeyError) {
      code = error.code;
    } else if (error && error.name === "AbortError") {
      return { ok: false, error: "aborted" };
    } else if (error && error.name === "NotAllowedError") {
      code = signingIn ? "noPasskey" : "cancelled";
    } else if (error && error.name === "InvalidStateError") {
      code = "exists";
    } else {
      code = "failed";
    }
    if (!quiet) {
      showError(s, code);
    }
    return { ok: false, error: code };
  }

  function resumeAutofill() {
    if (autofillOptions && autofillRestarts < 3) {
      autofillRestarts += 1;
      autofill(autofillOptions);
    }
  }

  // -- the API ---------------------------------------------------------------------------
  // One ceremony from the button or the register form: options, the browser's
  // prompt, the answer posted back. Autofill resumes after a failure that the
  // person did not cause by starting another ceremony.
  function ceremony(opts, action, prompt) {
    var s = settings(opts);
    clearError(s);
    if (!supported()) {
      return Promise.resolve(failed(s, new PasskeyError("unsupported")));
    }
    var signal = newSignal();
    return fetchOptions(s, action, s.email)
      .then(function (body) {
        return browserRequest(function () {
          return prompt(body.options, signal);
        });
      })
      .then(function (credential) {
        return post(s, action, credential);
      })
      .then(function (data) {
        return succeeded(s, data);
      })
      .catch(function (error) {
        var result = failed(s, error, false, action === "authenticate");
        if (result.error !== "aborted") {
          resumeAutofill();
        }
        return result;
      });
  }

  // The sign-in button: a refusal by the browser (NotAllowedError) is either the
  // person cancelling or a device with no passkey for this site, which WebAuthn
  // does not let the page tell apart, so the message says both and what to do.
  function signIn(opts) {
    return ceremony(opts, "authenticate", function (options, signal) {
      return navigator.credentials.get({ publicKey: requestOptions(options), signal: signal });
    });
  }

  function register(opts) {
    return ceremony(opts, "register", function (options, signal) {
      return navigator.credentials.create({
        publicKey: creationOptions(options),
        signal: signal
      });
    });
  }

  function autofill(opts) {
    var s = settings(opts);
    autofillOptions = opts || {};
    if (!supported() || !PublicKeyCredential.isConditionalMediationAvailable) {
      return Promise.resolve({ ok: false, error: "unsupported" });
    }
    return PublicKeyCredential.isConditionalMediationAvailable().then(function (available) {
      if (!available) {
        return { ok: false, error: "unsupported" };
      }
      var signal = newSignal();
      var asked = false;
      var picked = false;
      return fetchOptions(s, "authenticate")
        .then(function (body) {
          asked = true;
          return browserRequest(function () {
            return navigator.credentials.get({
              publicKey: requestOptions(body.options),
              mediation: "conditional",
              signal: signal
            });
          });
        })
        .then(function (credential) {
          picked = true;
          return post(s, "authenticate", credential);
        })
        .then(function (data) {
          autofillRestarts = 0;
          return succeeded(s, data);
        })
        .catch(function (error) {
          // Autofill speaks only about a passkey the person picked. Before that it
          // stays quiet: its options request failing, its request timing out on an
          // idle page, or being ended by another ceremony.
          var result = failed(s, error, !picked);
          if (asked && result.error !== "aborted" && result.error !== "rateLimited") {
            resumeAutofill();
          }
          return result;
        });
    });
  }

  function abort() {
    autofillOptions = null;
    if (controller) {
      controller.abort();
      controller = null;
    }
  }

  // -- binding the markup ------------------------------------------------------------------
  // The widget's own field, else the page's identifier field that it names
  // (data-identifier: the built-in sign-in page has one field for every method).
  function ownField(el) {
    return el.querySelector('input[autocomplete~="webauthn"], input[type="email"]');
  }

  function identifierField(el) {
    var id = el.dataset.identifier;
    return (id && document.getElementById(id)) || null;
  }

  function autofillField(el) {
    var input = identifierField(el) || ownField(el);
    return input && /(^|\s)webauthn(\s|$)/.test(input.getAttribute("autocomplete") || "")
      ? input
      : null;
  }

  // The address a ceremony sends: the widget's own field; else the identifier,
  // which for a new account counts only when it is an address (it may be a username).
  function emailOf(el, newAccount) {
    var own = ownField(el);
    if (own && own.value.trim()) {
      return own.value.trim();
    }
    var identifier = identifierField(el);
    var value = identifier && identifier.value ? identifier.value.trim() : "";
    if (newAccount && value.indexOf("@") < 1) {
      return "";
    }
    return value;
  }

  // Where a person types the new account's address: the widget's own field
  // (opening the disclosure it sits in), else the identifier field.
  function askForEmail(el) {
    var more = el.querySelector("[data-webauth-passkey-more]");
    if (more) {
      more.open = true;
    }
    var input = ownField(el) || identifierField(el);
    if (input) {
      input.focus();
    }
  }

  function withBusy(button, promise) {
    button.disabled = true;
    button.setAttribute("aria-busy", "true");
    return promise.then(function (result) {
      button.disabled = false;
      button.removeAttribute("aria-busy");
      return result;
    });
  }

  function bind(el) {
    if (el.getAttribute("data-webauth-bound")) {
      return;
    }
    el.setAttribute("data-webauth-bound", "true");
    if (el.hasAttribute("data-webauth-reveal")) {
      if (!supported()) {
        return; // stays hidden: the page's other ways to sign in are the way
      }
      el.hidden = false;
    }
    var signInButton = el.querySelector("#webauth-passkey-signin, [data-webauth-passkey-signin]");
    var registerButton = el.querySelector(
      "#webauth-passkey-register, [data-webauth-passkey-register]"
    );
    if (signInButton) {
      signInButton.addEventListener("click", function (event) {
        event.preventDefault();
        var email = el.dataset.discoverable === "true" ? "" : emailOf(el, false);
        withBusy(signInButton, signIn({ element: el, email: email }));
      });
    }
    if (registerButton) {
      registerButton.addEventListener("click", function (event) {
        event.preventDefault();
        var email = emailOf(el, true);
        if (el.dataset.needsEmail === "true" && !email) {
          showError(settings({ element: el }), "email");
          askForEmail(el);
          return;
        }
        withBusy(registerButton, register({ element: el, email: email }));
      });
    }
    if (el.dataset.autofill === "true" && autofillField(el)) {
      autofill({ element: el });
    }
  }

  // -- a security key as a second factor (webauth.mfa.keys) ---------------------------
  // Markup: a container [data-webauth-key="get|create"] (hidden until this script
  // shows it), holding a <script type="application/json"> with the options, a form
  // [data-webauth-key-form] with a hidden input name="credential", a button
  // [data-webauth-key-start], and a role="alert" element [data-webauth-passkey-error].
  // The options were made with the page (a single-use challenge), so the answer is
  // posted with the form as any other field; the server does the rest.
  function bindKey(el) {
    if (el.getAttribute("data-webauth-bound")) {
      return;
    }
    el.setAttribute("data-webauth-bound", "true");
    var s = { element: el };
    var button = el.querySelector("[data-webauth-key-start]");
    var form = el.querySelector("[data-webauth-key-form]");
    var script = el.querySelector('script[type="application/json"]');
    if (!button || !form || !script || !supported()) {
      return; // stays hidden: the code form is the way
    }
    el.hidden = false;
    button.addEventListener("click", function (event) {
      event.preventDefault();
      clearError(s);
      var json = JSON.parse(script.textContent);
      var creating = el.dataset.webauthKey === "create";
      var ceremony = creating
        ? navigator.credentials.create({ publicKey: creationOptions(json), signal: newSignal() })
        : navigator.credentials.get({ publicKey: requestOptions(json), signal: newSignal() });
      button.setAttribute("aria-busy", "true");
      ceremony
        .then(function (credential) {
          form.querySelector('input[name="credential"]').value = JSON.stringify(
            credentialJSON(credential)
          );
          // "Don't ask again on this browser" sits in the code form: carry its choice.
          var trust = document.querySelector('input[name="trust"][type="checkbox"]');
          var keep = form.querySelector('input[name="trust"][type="hidden"]');
          if (trust && keep) {
            keep.value = trust.checked ? "1" : "";
          }
          form.submit();
        })
        .catch(function (error) {
          button.removeAttribute("aria-busy");
          var name = error && error.name;
          showError(s, name === "InvalidStateError" ? "exists" : "cancelled");
        });
    });
  }

  function bindAll() {
    var containers = document.querySelectorAll("[data-webauth-passkeys]");
    for (var i = 0; i < containers.length; i++) {
      bind(containers[i]);
    }
    var keys = document.querySelectorAll("[data-webauth-key]");
    for (var j = 0; j < keys.length; j++) {
      bindKey(keys[j]);
    }
  }

  window.webauth = window.webauth || {};
  window.webauth.passkeys = {
    signIn: signIn,
    register: register,
    autofill: autofill,
    abort: abort,
    bind: bindAll
  };

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", bindAll);
  } else {
    bindAll();
  }
})();
