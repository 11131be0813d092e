"""``dynadesk image build|show|list``: the offline, reproducible evaluator image."""

from __future__ import annotations

from pathlib import Path

import click

from dynadesk.cli.common import echo_json, echo_table, json_option, pass_app


def _cache(app, cache: str | None) -> Path:
    return Path(cache) if cache else app.workspace.images_dir


def _print(record) -> None:
    click.echo(f"tag           {record.tag}{'  (cached build)' if record.cached else ''}")
    click.echo(f"image id      {record.image_id}")
    click.echo(f"layer digest  {record.layer_digest}")
    click.echo(f"input digest  {record.input_digest}")
    click.echo(f"evaluator     {record.evaluator_version} (schema {record.schema_version})")
    click.echo(f"created       {record.created} (SOURCE_DATE_EPOCH={record.source_date_epoch})")
    click.echo(f"archive       {record.archive} ({record.size_bytes / 1e9:.2f} GB, "
               f"sha256 {record.archive_sha256[:16]})")
    click.echo(f"debootstrap   {record.debootstrap_tarball} (sha256 {record.debootstrap_sha256[:16]}) "
               f"from {record.mirror}")
    click.echo(f"contents      {len(record.dpkg)} Debian packages, {len(record.python_packages)} Python packages")
    if record.build_seconds:
        click.echo(f"build time    {record.build_seconds:.0f} s")


@click.group()
def image():
    """Build and inspect the evaluator image (offline, reproducible)."""


@image.command("build")
@click.option("--epoch", type=int, default=None,
              help="SOURCE_DATE_EPOCH for the image's timestamps (default: $SOURCE_DATE_EPOCH, else the last commit).")
@click.option("--force", is_flag=True, help="Rebuild even if an image with the same inputs exists.")
@click.option("--no-compile", is_flag=True, help="Skip precompiling bytecode (smaller, slower start-up).")
@click.option("--tarball", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Pin debootstrap to a kept --make-tarball from an earlier build.")
@click.option("--cache", type=click.Path(file_okay=False), default=None,
              help="Build folder (default: the workspace's images folder).")
@json_option
@pass_app
def build(app, epoch, force, no_compile, tarball, cache, as_json):
    """Build the evaluator image with debootstrap + a hand-made docker-save archive, and load it."""
    from dynadesk.orchestration.image import build_image

    def step(name: str) -> None:
        if not as_json:
            click.echo(f"- {name}", err=True)

    record = build_image(_cache(app, cache), epoch=epoch, force=force, compile_bytecode=not no_compile,
                         tarball=Path(tarball) if tarball else None, step=step)
    if as_json:
        echo_json(record.to_dict())
    else:
        _print(record)


@image.command("show")
@click.option("--cache", type=click.Path(file_okay=False), default=None)
@click.option("--packages", is_flag=True, help="Also list the Debian and Python packages.")
@json_option
@pass_app
def show(app, cache, packages, as_json):
    """Show the image built for this evaluator version (Id, layer digest, package lists)."""
    from dynadesk.errors import NotFoundError
    from dynadesk.orchestration.image import image_tag, list_records

    tag = image_tag()
    records = [r for r in list_records(_cache(app, cache)) if r.tag == tag]
    if not records:
        raise NotFoundError(f"no image built for this evaluator version ({tag}); run 'dynadesk image build'")
    record = records[0]
    if as_json:
        echo_json(record.to_dict())
        return
    _print(record)
    if packages:
        click.echo("\nDebian packages:")
        for line in record.dpkg:
            click.echo(f"  {line}")
        click.echo("\nPython packages:")
        for line in record.python_packages:
            click.echo(f"  {line}")


@image.command("list")
@click.option("--cache", type=click.Path(file_okay=False), default=None)
@json_option
@pass_app
def list_images(app, cache, as_json):
    """Every image built in the workspace, newest first."""
    from dynadesk.orchestration.image import image_tag, list_records

    records = list_records(_cache(app, cache))
    if as_json:
        echo_json([{k: v for k, v in r.to_dict().items() if k not in ("dpkg", "python_packages", "wheels")}
                   for r in records])
        return
    current = image_tag()
    echo_table(["tag", "image id", "created", "size GB", "current"],
               [[r.tag, r.image_id[7:19], r.created[:19], f"{r.size_bytes / 1e9:.2f}", "*" if r.tag == current else ""]
                for r in records])


@image.command("status")
@json_option
def status(as_json: bool) -> None:
    """Does a Docker daemon answer, and is this evaluator version's image loaded? Exits 1 without a daemon."""
    from dynadesk.orchestration.daemon import daemon_status, docker_client, has_image
    from dynadesk.orchestration.image import image_tag

    daemon = daemon_status()
    tag = image_tag()
    loaded = has_image(docker_client(), tag) if daemon.ok else None
    if as_json:
        echo_json({"daemon": daemon.ok, "detail": daemon.detail, "image": tag, "image_loaded": loaded})
    else:
        click.echo(daemon.detail)
        if loaded is not None:
            click.echo(f"image {tag}: {'loaded' if loaded else 'not loaded (dynadesk image build)'}")
    if not daemon.ok:
        raise SystemExit(1)
