/* imgpress bulk page: starts, pauses and resumes the run, and lends the open page's requests to
 * the queue (POST /run) while it has work; the figures come back with every answer. */
(function () {
	'use strict';
	var cfg = window.imgpressBulk;
	if (!cfg) {
		return;
	}
	var $ = function (id) {
		return document.getElementById(id);
	};
	var s = cfg.strings;
	var state = cfg.status;
	var busy = false;

	function format(text) {
		var args = Array.prototype.slice.call(arguments, 1);
		return text.replace(/%(?:(\d+)\$)?[sd]/g, function (m, n) {
			return String(args[n ? n - 1 : 0]);
		});
	}
	function bytes(n) {
		var units = ['B', 'KB', 'MB', 'GB', 'TB'];
		var i = 0;
		n = Math.max(0, n);
		while (n >= 1024 && i < units.length - 1) {
			n /= 1024;
			i++;
		}
		return (i === 0 ? n : n.toFixed(1)) + ' ' + units[i];
	}
	function duration(sec) {
		return sec >= 90 ? format(s.minutes, Math.round(sec / 60)) : format(s.seconds, sec);
	}

	function render() {
		var bar = document.querySelector('.imgpress-bar');
		bar.setAttribute('aria-valuenow', String(state.percent));
		bar.querySelector('.imgpress-bar-fill').style.width = state.percent + '%';
		var figures = [state.percent + ' %', format(s.of, state.done, state.total), format(s.saved, bytes(state.saved))];
		if (state.errors) {
			figures.push(format(s.errors, state.errors));
		}
		if (state.eta && !state.blocked && !state.paused) {
			figures.push(format(s.eta, duration(state.eta)));
		}
		$('imgpress-count').textContent = figures.join(' · ');
		var message = state.message;
		if (message && state.blocked === 'backoff' && state.waiting_for > 0) {
			message += ' ' + format(s.next, duration(state.waiting_for));
		}
		if (!message) {
			message = !state.running ? s.idle : state.remaining === 0 ? s.done : s.running;
		}
		$('imgpress-message').textContent = message;
		$('imgpress-start').disabled = state.remaining > 0 && !state.paused;
		$('imgpress-pause').disabled = state.paused || state.remaining === 0;
		$('imgpress-resume').disabled = !state.paused;
		document.querySelector('.imgpress-bulk').setAttribute('data-state', state.paused ? 'paused' : state.remaining > 0 ? 'running' : 'idle');
	}

	function call(method, path, body) {
		return fetch(cfg.root + path, {
			method: method,
			credentials: 'same-origin',
			headers: { 'X-WP-Nonce': cfg.nonce, 'Content-Type': 'application/json' },
			body: body ? JSON.stringify(body) : undefined
		}).then(function (res) {
			if (!res.ok) {
				throw new Error(String(res.status));
			}
			return res.json();
		});
	}

	function loop() {
		if (busy || state.paused || state.remaining === 0 || state.blocked === 'not_connected') {
			return;
		}
		busy = true;
		var before = state.done;
		var wait = state.blocked ? Math.min(5, Math.max(1, state.waiting_for || 3)) * 1000 : 0;
		setTimeout(function () {
			call('POST', '/run')
				.then(function (next) {
					state = next;
					render();
					busy = false;
					// A run held by WP-Cron makes no progress here: look again shortly.
					setTimeout(loop, state.done === before ? 1500 : 0);
				})
				.catch(function () {
					busy = false;
					$('imgpress-message').textContent = s.failed;
					setTimeout(loop, 5000);
				});
		}, wait);
	}

	function action(name) {
		call('POST', '/bulk', { action: name }).then(function (next) {
			state = next;
			render();
			loop();
		});
	}

	$('imgpress-start').addEventListener('click', function () {
		action('start');
	});
	$('imgpress-pause').addEventListener('click', function () {
		action('pause');
	});
	$('imgpress-resume').addEventListener('click', function () {
		action('resume');
	});
	render();
	loop();
})();
