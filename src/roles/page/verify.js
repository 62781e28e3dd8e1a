// The wallet verification page's script (served by roles/web.ts, same origin, no framework).
// Finds the browser's wallets (EIP-6963, then window.ethereum) and asks one for a Sign-In with
// Ethereum signature of the message the bot issues; or, with no wallet, shows the message to sign
// anywhere and takes the pasted signature. Every text from outside goes in with textContent.

(() => {
  const body = document.body;
  const config = {
    challengeUrl: body.dataset.challenge || '',
    signatureUrl: body.dataset.signature || '',
    pageToken: body.dataset.pageToken || '',
  };
  const hash = new URLSearchParams(window.location.hash.slice(1));
  const initData = hash.get('tgWebAppData') || undefined;
  const byId = (id) => document.getElementById(id);
  const result = byId('result');
  let finished = false;
  let pastedMessage = '';

  function show(text, tone) {
    result.textContent = text;
    result.dataset.tone = tone;
  }

  function finish(answer) {
    if (answer.ok) {
      finished = true;
      for (const button of document.querySelectorAll('button')) button.disabled = true;
      show(answer.text, 'success');
    } else {
      show(answer.text, 'error');
    }
  }

  async function post(url, payload) {
    const request = initData === undefined ? payload : Object.assign({ initData }, payload);
    let response;
    try {
      response = await fetch(url, {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'application/json', 'x-floorwatch-page-token': config.pageToken },
        body: JSON.stringify(request),
      });
    } catch {
      return { ok: false, text: 'The bot could not be reached. Check your connection and try again.' };
    }
    try {
      const answer = await response.json();
      if (answer && typeof answer.text === 'string') return answer;
    } catch {
      // Not JSON: said below.
    }
    return { ok: false, text: `The bot answered with an error (HTTP ${response.status}).` };
  }

  function toHex(text) {
    const bytes = new TextEncoder().encode(text);
    let out = '0x';
    for (const byte of bytes) out += byte.toString(16).padStart(2, '0');
    return out;
  }

  function walletError(error) {
    if (error && error.code === 4001) return 'You declined in your wallet.';
    const reason = error && typeof error.message === 'string' ? error.message : String(error);
    return `Your wallet could not sign: ${reason.slice(0, 200)}`;
  }

  async function signWith(entry) {
    if (finished) return;
    try {
      show('Asking your wallet for its address…', 'info');
      const accounts = await entry.provider.request({ method: 'eth_requestAccounts' });
      const address = Array.isArray(accounts) ? accounts[0] : undefined;
      if (typeof address !== 'string') {
        show('Your wallet gave no address.', 'error');
        return;
      }
      const challenge = await post(config.challengeUrl, { address });
      if (!challenge.ok) {
        show(challenge.text, 'error');
        return;
      }
      show('Sign the message in your wallet…', 'info');
      const signature = await entry.provider.request({
        method: 'personal_sign',
        params: [toHex(challenge.message), address],
      });
      show('Checking the signature…', 'info');
      finish(await post(config.signatureUrl, { message: challenge.message, signature }));
    } catch (error) {
      show(walletError(error), 'error');
    }
  }

  // Wallets announce themselves (EIP-6963); window.ethereum is the older way, used when none does.
  const wallets = new Map();
  const list = byId('wallet-list');
  const status = byId('wallet-status');

  function render(searched) {
    list.replaceChildren();
    for (const entry of wallets.values()) {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'wallet';
      button.textContent = `Sign with ${entry.name}`;
      button.disabled = finished;
      button.addEventListener('click', () => void signWith(entry));
      list.append(button);
    }
    if (wallets.size > 0) status.textContent = 'Choose the wallet to verify:';
    else if (searched) status.textContent = 'No wallet found in this browser. Use the steps below instead.';
  }

  window.addEventListener('eip6963:announceProvider', (event) => {
    const detail = event.detail;
    if (!detail?.info || !detail.provider || typeof detail.provider.request !== 'function') return;
    const uuid = String(detail.info.uuid || detail.info.name || wallets.size);
    if (wallets.has(uuid)) return;
    const name = String(detail.info.name || 'a wallet').slice(0, 60);
    wallets.set(uuid, { name, provider: detail.provider });
    render(false);
  });
  window.dispatchEvent(new Event('eip6963:requestProvider'));
  setTimeout(() => {
    const injected = window.ethereum;
    if (wallets.size === 0 && injected && typeof injected.request === 'function') {
      wallets.set('injected', { name: 'the browser wallet', provider: injected });
    }
    render(true);
  }, 500);

  // Without a browser wallet: the message to sign anywhere, and the signature pasted back.
  byId('get-message').addEventListener('click', async () => {
    if (finished) return;
    const address = byId('address').value.trim();
    const challenge = await post(config.challengeUrl, { address });
    if (!challenge.ok) {
      show(challenge.text, 'error');
      return;
    }
    pastedMessage = challenge.message;
    byId('message').value = challenge.message;
    byId('paste-steps').hidden = false;
    show('Sign the message above with your wallet (personal_sign), then paste the signature.', 'info');
  });

  byId('copy').addEventListener('click', async () => {
    const field = byId('message');
    try {
      await navigator.clipboard.writeText(field.value);
      show('Message copied.', 'info');
    } catch {
      field.select();
      show('Select the message and copy it.', 'info');
    }
  });

  byId('send-signature').addEventListener('click', async () => {
    if (finished) return;
    const signature = byId('signature').value.trim();
    show('Checking the signature…', 'info');
    finish(await post(config.signatureUrl, { message: pastedMessage, signature }));
  });
})();
