//! The hypervisor as the switch's controller: HELLO, SET_CONFIG (whole
//! packets to the controller), FEATURES_REQUEST and, in 1.3, the port
//! descriptions, before any tenant is connected.

use crate::chan::Chan;
use crate::ofwire::{self, SwitchInfo, t13};
use crate::server::Shared;
use crate::translate::OWN_XIDS as HV_XID;
use anyhow::{Context, bail};
use perfbench::clock::now_ns;
use perfbench::codec::{self, Header, Version, of13, types};
use perfbench::conn::RecvBuf;
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

fn read_msg(
    s: &mut TcpStream,
    rb: &mut RecvBuf,
    deadline: u64,
    what: &str,
) -> anyhow::Result<Vec<u8>> {
    loop {
        if let Some(m) = rb.next_msg()? {
            return Ok(m.to_vec());
        }
        if now_ns() >= deadline {
            bail!("timed out waiting for {what}");
        }
        s.set_read_timeout(Some(Duration::from_millis(50)))?;
        match rb.fill(s) {
            Ok(0) => bail!("switch closed the connection while we waited for {what}"),
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e).context("reading from the switch"),
        }
    }
}

/// HELLO, SET_CONFIG (whole packets to the controller), FEATURES_REQUEST and,
/// in 1.3, the port descriptions; then the tenants are connected.
pub fn handshake(shared: &Shared, mut stream: TcpStream) -> anyhow::Result<(SwitchInfo, Chan)> {
    stream.set_nodelay(shared.nodelay)?;
    let deadline = now_ns() + 10_000_000_000;
    let mut rb = RecvBuf::new(1 << 20);
    let v = negotiate(shared, &mut stream, &mut rb, deadline)?;
    send_setup(&mut stream, v)?;
    let mut replies = SetupReplies::new(v);
    while !replies.complete() {
        let m = read_msg(
            &mut stream,
            &mut rb,
            deadline,
            "FEATURES_REPLY and port descriptions",
        )?;
        replies.take(&mut stream, &m)?;
    }
    let info = replies.into_info();
    let mut sw = Chan::new(stream, shared.nodelay)?;
    // Messages that arrived behind the replies are still in the handshake's buffer.
    while let Some(m) = rb.next_msg()? {
        sw.push_input(m);
    }
    Ok((info, sw))
}

/// Exchanges HELLOs and returns the version both sides speak.
fn negotiate(
    shared: &Shared,
    stream: &mut TcpStream,
    rb: &mut RecvBuf,
    deadline: u64,
) -> anyhow::Result<Version> {
    stream.write_all(&perfbench::messages::hello(&shared.versions).to_bytes(HV_XID)?)?;
    let hello = read_msg(stream, rb, deadline, "the switch's HELLO")?;
    let h = Header::parse(&hello)?;
    if h.msg_type != types::HELLO {
        bail!("expected HELLO, got type {}", h.msg_type);
    }
    let bitmap = (h.version == codec::OFP13)
        .then(|| {
            of13::Message::decode(&hello)
                .ok()
                .and_then(|(_, m)| m.hello_bitmap())
        })
        .flatten();
    codec::negotiate(&shared.versions, h.version, bitmap).with_context(|| {
        format!(
            "no common OpenFlow version (switch says 0x{:02x})",
            h.version
        )
    })
}

/// SET_CONFIG, FEATURES_REQUEST and (1.3) the PORT_DESC request, in one write.
fn send_setup(stream: &mut TcpStream, v: Version) -> anyhow::Result<()> {
    let mut setup = Vec::new();
    // flags 0, miss_send_len 0xffff: whole packets, whatever a tenant asks for.
    setup.extend(ofwire::with_body(
        v,
        ofwire::SET_CONFIG,
        HV_XID + 1,
        &[0, 0, 0xff, 0xff],
    ));
    perfbench::messages::features_request(v).encode(HV_XID + 2, &mut setup)?;
    if v == Version::V13 {
        setup.extend(ofwire::with_body(
            v,
            t13::MULTIPART_REQUEST,
            HV_XID + 3,
            &[0, 13, 0, 0, 0, 0, 0, 0],
        ));
    }
    stream.write_all(&setup)?;
    Ok(())
}

/// What the switch has answered to the setup so far.
struct SetupReplies {
    version: Version,
    /// The FEATURES_REPLY body without its port list.
    head: Option<Vec<u8>>,
    /// 1.0: from FEATURES_REPLY; 1.3: from PORT_DESC (empty if unsupported).
    ports: Option<Vec<Vec<u8>>>,
    dpid: u64,
}

impl SetupReplies {
    fn new(version: Version) -> SetupReplies {
        SetupReplies {
            version,
            head: None,
            // 1.0 lists the ports in FEATURES_REPLY; until it comes, none.
            ports: (version == Version::V10).then(Vec::new),
            dpid: 0,
        }
    }

    fn complete(&self) -> bool {
        self.head.is_some() && self.ports.is_some()
    }

    /// Takes one message of the switch's (answering its ECHO_REQUESTs).
    fn take(&mut self, stream: &mut TcpStream, m: &[u8]) -> anyhow::Result<()> {
        let v = self.version;
        let (h, body) = codec::split(m)?;
        match h.msg_type {
            types::ECHO_REQUEST => {
                stream.write_all(&ofwire::with_body(v, types::ECHO_REPLY, h.xid, body))?;
            }
            types::FEATURES_REPLY => self.take_features(body)?,
            t13::MULTIPART_REPLY if v == Version::V13 && h.xid == HV_XID + 3 => {
                // the multipart header (type, flags, pad) is 8 bytes; a shorter reply is the
                // switch's error, not a reason for the hypervisor to panic
                let ports = body
                    .get(8..)
                    .with_context(|| format!("PORT_DESC reply of {} bytes", body.len()))?;
                let got = ofwire::split_ports(v, ports).context("PORT_DESC reply")?;
                self.ports.get_or_insert_with(Vec::new).extend(got);
            }
            // A switch without PORT_DESC (or SET_CONFIG) support still gets sliced: no port list.
            types::ERROR if h.xid == HV_XID + 3 => {
                self.ports.get_or_insert_with(Vec::new);
            }
            types::ERROR if h.xid == HV_XID + 1 => {}
            types::ERROR => bail!("switch sent OFPT_ERROR during the handshake"),
            _ => {}
        }
        Ok(())
    }

    fn take_features(&mut self, body: &[u8]) -> anyhow::Result<()> {
        let v = self.version;
        let n = if v == Version::V10 { 24 } else { body.len() };
        if body.len() < n.max(8) {
            bail!("FEATURES_REPLY of {} bytes", body.len());
        }
        self.dpid = u64::from_be_bytes(body[0..8].try_into()?);
        self.head = Some(body[..n].to_vec());
        if v == Version::V10 {
            self.ports = Some(ofwire::split_ports(v, &body[n..]).context("FEATURES_REPLY ports")?);
        }
        Ok(())
    }

    /// The switch as the tenants will see it: physical ports only.
    fn into_info(self) -> SwitchInfo {
        let v = self.version;
        let physical = |p: &Vec<u8>| {
            ofwire::port_no(v, p)
                < if v == Version::V10 {
                    0xff00
                } else {
                    0xffff_ff00
                }
        };
        SwitchInfo {
            version: v,
            dpid: self.dpid,
            features_head: self.head.unwrap_or_default(),
            ports: self
                .ports
                .unwrap_or_default()
                .into_iter()
                .filter(physical)
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_port_desc_reply_shorter_than_its_header_is_an_error_not_a_panic() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut stream = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let mut replies = SetupReplies::new(Version::V13);
        let short = ofwire::with_body(Version::V13, t13::MULTIPART_REPLY, HV_XID + 3, &[0, 13]);
        let err = replies.take(&mut stream, &short).unwrap_err();
        assert!(
            format!("{err:#}").contains("PORT_DESC reply of 2 bytes"),
            "{err:#}"
        );
        assert!(replies.ports.is_none());
    }
}
