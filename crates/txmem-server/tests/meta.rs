//! The meta commands over TCP, against an in-process server.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use txmem_server::{Server, Settings};

struct Client {
    sock: TcpStream,
}

impl Client {
    fn connect(addr: std::net::SocketAddr) -> Client {
        let sock = TcpStream::connect(addr).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        sock.set_nodelay(true).unwrap();
        Client { sock }
    }

    /// Sends `request` and reads exactly the bytes of `reply`.
    fn check(&mut self, request: &[u8], reply: &str) {
        self.sock.write_all(request).unwrap();
        let mut got = vec![0; reply.len()];
        self.sock.read_exact(&mut got).unwrap_or_else(|e| {
            panic!("reading the reply to {request:?}: {e}");
        });
        assert_eq!(String::from_utf8_lossy(&got), reply, "request {request:?}");
    }

    /// Sends `request` and returns its one-line reply.
    fn line(&mut self, request: &[u8]) -> String {
        self.sock.write_all(request).unwrap();
        let mut got = Vec::new();
        let mut b = [0u8];
        while !got.ends_with(b"\r\n") {
            self.sock.read_exact(&mut b).unwrap();
            got.push(b[0]);
        }
        String::from_utf8(got).unwrap()
    }
}

fn server() -> txmem_server::ServerHandle {
    Server::bind(Settings {
        port: 0,
        threads: 2,
        ..Settings::default()
    })
    .unwrap()
    .spawn()
    .unwrap()
}

#[test]
fn meta_commands_over_tcp() {
    let server = server();
    let mut c = Client::connect(server.addr);
    c.check(b"mn\r\n", "MN\r\n");
    c.check(b"ms foo 5 T60 F7 c\r\n", "");
    // The value arrives in a later packet.
    std::thread::sleep(Duration::from_millis(20));
    let reply = c.line(b"hello\r\n");
    assert!(reply.starts_with("HD c"), "{reply}");
    let cas = reply.trim_end().strip_prefix("HD c").unwrap().to_string();
    c.check(
        b"mg foo v f t k Oq1\r\n",
        "VA 5 f7 t60 kfoo Oq1\r\nhello\r\n",
    );
    c.check(format!("mg foo v C{cas}\r\n").as_bytes(), "HD\r\n");
    // Mixed with the text protocol on one connection.
    c.check(b"get foo\r\n", "VALUE foo 7 5\r\nhello\r\nEND\r\n");
    // Quiet, pipelined, closed by a no-op.
    c.check(
        b"mg a v q\r\nms b 1 q\r\nx\r\nmg b v q\r\nmd a q\r\nmd b q\r\nmn\r\n",
        "VA 1\r\nx\r\nNF\r\nMN\r\n",
    );
    c.check(
        b"ma n N0 J41 v\r\nma n v\r\n",
        "VA 2\r\n41\r\nVA 2\r\n42\r\n",
    );
    c.check(b"ms Zm9v 1 b MA k\r\n!\r\n", "HD kZm9v b\r\n");
    c.check(b"mg foo s v\r\n", "VA 6 s6\r\nhello!\r\n");
    c.check(b"mg foo Z\r\n", "CLIENT_ERROR invalid flag\r\n");
    // Stale-while-revalidate across two connections: one wins the recache.
    let mut d = Client::connect(server.addr);
    c.check(b"md foo I T30\r\n", "HD\r\n");
    c.check(b"mg foo v\r\n", "VA 6 X W\r\nhello!\r\n");
    d.check(b"mg foo v\r\n", "VA 6 Z X\r\nhello!\r\n");
    c.check(b"ms foo 3\r\nnew\r\n", "HD\r\n");
    d.check(b"mg foo v\r\n", "VA 3\r\nnew\r\n");
    let stats = server.shared.stats.totals();
    assert!(stats.cmd_get >= 6 && stats.cmd_set >= 3, "{stats:?}");
}

#[test]
fn a_large_value_in_many_pieces() {
    let server = server();
    let mut c = Client::connect(server.addr);
    let value: Vec<u8> = (0..300_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let mut request = format!("ms big {} T0\r\n", value.len()).into_bytes();
    request.extend_from_slice(&value);
    request.extend_from_slice(b"\r\n");
    for piece in request.chunks(7919) {
        c.sock.write_all(piece).unwrap();
    }
    c.check(b"", "HD\r\n");
    c.sock.write_all(b"mg big v s\r\n").unwrap();
    let header = format!("VA {0} s{0}\r\n", value.len());
    let mut got = vec![0; header.len() + value.len() + 2];
    c.sock.read_exact(&mut got).unwrap();
    assert_eq!(&got[..header.len()], header.as_bytes());
    assert_eq!(&got[header.len()..header.len() + value.len()], &value[..]);
    // Too large: refused, its data skipped, the connection still usable.
    let too_big = 2 << 20;
    let mut request = format!("ms huge {too_big}\r\n").into_bytes();
    request.resize(request.len() + too_big, b'z');
    request.extend_from_slice(b"\r\nmn\r\n");
    c.sock.write_all(&request).unwrap();
    c.check(b"", "SERVER_ERROR object too large for cache\r\nMN\r\n");
}

#[test]
fn concurrent_vivify_has_one_winner() {
    let server = server();
    let addr = server.addr;
    let wins: usize = std::thread::scope(|s| {
        let hs: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(move || {
                    let mut c = Client::connect(addr);
                    let reply = c.line(b"mg hot N30 s\r\n");
                    assert!(reply.starts_with("HD s0"), "{reply}");
                    usize::from(reply.contains(" W"))
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(wins, 1);
}
