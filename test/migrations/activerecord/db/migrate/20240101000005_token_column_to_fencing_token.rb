# ar_row is fenced on a bigint column (fencing_protect(token_column => 'fence')):
# the team moves it to the fencing_token type.
class TokenColumnToFencingToken < ActiveRecord::Migration[6.1]
  def up
    change_column :ar_row, :fence, "fencing_token"
  end

  def down
    raise ActiveRecord::IrreversibleMigration
  end
end
