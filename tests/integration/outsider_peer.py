#!/usr/bin/python3
"""A stock BitTorrent client (Debian's python3-libtorrent) that knows a
torrent and an agent's peer port, and holds a certificate of its choosing,
or none.

    outsider_peer.py TORRENT HOST PORT SECONDS [CERT KEY]

Adds TORRENT (a .torrent file), connects to HOST:PORT, and downloads for up
to SECONDS, or until it has the whole file. Prints one JSON object: payload
bytes downloaded, pieces had, whether it finished, and the errors its
connections ended with.
"""

import json
import sys
import tempfile
import time

import libtorrent as lt


def main():
    torrent, host, port, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    cert, key = (sys.argv[5], sys.argv[6]) if len(sys.argv) > 6 else (None, None)
    session = lt.session({
        "listen_interfaces": "127.0.0.1:0,127.0.0.1:0s",
        "enable_dht": False,
        "enable_lsd": False,
        "enable_upnp": False,
        "enable_natpmp": False,
        "enable_incoming_utp": False,
        "enable_outgoing_utp": False,
        "allow_multiple_connections_per_ip": True,
        "alert_mask": lt.alert.category_t.all_categories,
    })
    errors = []
    with tempfile.TemporaryDirectory(prefix="outsider-") as save:
        params = lt.add_torrent_params()
        params.ti = lt.torrent_info(torrent)
        params.save_path = save
        handle = session.add_torrent(params)
        if cert:
            handle.set_ssl_certificate(cert, key, "")
        handle.connect_peer((host, port))
        deadline = time.monotonic() + seconds
        status = handle.status()
        while time.monotonic() < deadline:
            for alert in session.pop_alerts():
                if isinstance(alert, (lt.peer_error_alert, lt.peer_disconnected_alert)):
                    errors.append(alert.message())
            status = handle.status()
            if status.is_seeding:
                break
            time.sleep(0.1)
        print(json.dumps({
            "downloaded": status.total_payload_download,
            "pieces": status.num_pieces,
            "done": bool(status.is_seeding),
            "ssl_torrent": bool(params.ti.ssl_cert()),
            "errors": errors[:10],
        }))


if __name__ == "__main__":
    main()
